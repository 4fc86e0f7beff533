/* Storage layouts: BHWC mapping, extents per storage and precision, limits and fallbacks. */
#include "support/tg_test.h"

#include <stdio.h>
#include <string.h>

#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/model.h"

static void names_round_trip(void **state) {
  (void)state;
  for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
    tg_storage back;
    assert_non_null(tg_storage_name((tg_storage)s));
    assert_int_equal(tg_storage_from_name(tg_storage_name((tg_storage)s), &back), TG_OK);
    assert_int_equal(back, s);
  }
  assert_string_equal(tg_storage_name(TG_STORAGE_SINGLE_TEXTURE_2D), "single_texture_2d");
  assert_null(tg_storage_name(TG_STORAGE_COUNT));
  tg_storage s;
  assert_int_equal(tg_storage_from_name("texture", &s), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_storage_dims(TG_STORAGE_BUFFER), 1);
  assert_int_equal(tg_storage_dims(TG_STORAGE_IMAGE_BUFFER), 1);
  assert_int_equal(tg_storage_dims(TG_STORAGE_TEXTURE_2D), 2);
  assert_int_equal(tg_storage_dims(TG_STORAGE_SINGLE_TEXTURE_2D), 2);
  assert_int_equal(tg_storage_dims(TG_STORAGE_TEXTURE_ARRAY), 3);
  assert_int_equal(tg_storage_dims(TG_STORAGE_TEXTURE_3D), 3);
  assert_int_equal(tg_storage_dims(TG_STORAGE_COUNT), 0);

  tg_precision p;
  assert_int_equal(tg_precision_from_name("fp16", &p), TG_OK);
  assert_int_equal(p, TG_PRECISION_FP16);
  assert_string_equal(tg_precision_name(TG_PRECISION_FP32), "fp32");
  assert_int_equal(tg_precision_from_name("fp8", &p), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_precision_texel_bytes(TG_PRECISION_FP32), 16);
  assert_int_equal(tg_precision_texel_bytes(TG_PRECISION_FP16), 8);
  assert_int_equal(tg_precision_element_bytes(TG_PRECISION_COUNT), 0);
}

static void shapes_map_to_bhwc(void **state) {
  (void)state;
  static const struct {
    uint32_t rank;
    int64_t shape[6];
    tg_bhwc want;
  } cases[] = {
      {0, {0}, {1, 1, 1, 1}},
      {1, {7}, {1, 1, 1, 7}},
      {2, {2, 7}, {2, 1, 1, 7}},
      {3, {2, 5, 7}, {2, 1, 5, 7}},
      {4, {2, 3, 5, 7}, {2, 3, 5, 7}},
      {5, {2, 3, 4, 5, 7}, {6, 4, 5, 7}},
      {6, {2, 2, 3, 4, 5, 7}, {12, 4, 5, 7}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    tg_bhwc got;
    assert_int_equal(tg_shape_to_bhwc(cases[i].shape, cases[i].rank, &got), TG_OK);
    assert_memory_equal(&got, &cases[i].want, sizeof got);
  }
  tg_bhwc got;
  int64_t neg[2] = {1, -1};
  assert_int_equal(tg_shape_to_bhwc(neg, 2, &got), TG_ERROR_INVALID_ARGUMENT);
  int64_t big[7] = {INT64_MAX, INT64_MAX, 2, 2, 1, 1, 1};
  assert_int_equal(tg_shape_to_bhwc(big, 7, &got), TG_ERROR_OVERFLOW);
  assert_int_equal(tg_shape_to_bhwc(big, TG_MAX_RANK + 1, &got), TG_ERROR_INVALID_ARGUMENT);
}

static void extents_per_storage(void **state) {
  (void)state;
  tg_bhwc s = {2, 3, 5, 7}; /* S = 2 */
  tg_extent e;
  assert_int_equal(tg_storage_extent(s, TG_STORAGE_BUFFER, TG_PRECISION_FP32, &e), TG_OK);
  assert_true(e.w == 2 * 3 * 5 * 2 * 16 && e.h == 1 && e.d == 1);
  assert_int_equal(tg_storage_extent(s, TG_STORAGE_BUFFER, TG_PRECISION_FP16, &e), TG_OK);
  assert_int_equal(e.w, 2 * 3 * 5 * 2 * 8);
  assert_int_equal(tg_storage_extent(s, TG_STORAGE_IMAGE_BUFFER, TG_PRECISION_FP32, &e), TG_OK);
  assert_int_equal(e.w, 960);
  assert_int_equal(tg_storage_extent(s, TG_STORAGE_TEXTURE_2D, TG_PRECISION_FP32, &e), TG_OK);
  assert_true(e.w == 10 && e.h == 6 && e.d == 1);
  /* Textures count texels: precision does not change the extent. */
  assert_int_equal(tg_storage_extent(s, TG_STORAGE_TEXTURE_2D, TG_PRECISION_FP16, &e), TG_OK);
  assert_true(e.w == 10 && e.h == 6 && e.d == 1);
  assert_int_equal(tg_storage_extent(s, TG_STORAGE_TEXTURE_ARRAY, TG_PRECISION_FP32, &e), TG_OK);
  assert_true(e.w == 10 && e.h == 3 && e.d == 2);
  assert_int_equal(tg_storage_extent(s, TG_STORAGE_TEXTURE_3D, TG_PRECISION_FP32, &e), TG_OK);
  assert_true(e.w == 10 && e.h == 3 && e.d == 2);
  assert_int_equal(tg_storage_extent(s, TG_STORAGE_SINGLE_TEXTURE_2D, TG_PRECISION_FP32, &e),
                   TG_ERROR_UNSUPPORTED);
  s.c = 4;
  assert_int_equal(tg_storage_extent(s, TG_STORAGE_SINGLE_TEXTURE_2D, TG_PRECISION_FP32, &e), TG_OK);
  assert_true(e.w == 10 && e.h == 3 && e.d == 1);
  /* Channels round up to slices of 4. */
  s.c = 5;
  assert_int_equal(tg_storage_extent(s, TG_STORAGE_TEXTURE_3D, TG_PRECISION_FP32, &e), TG_OK);
  assert_int_equal(e.d, 2);
  s.c = 0;
  assert_int_equal(tg_storage_extent(s, TG_STORAGE_BUFFER, TG_PRECISION_FP32, &e), TG_OK);
  assert_int_equal(e.w, 0);
  /* Overflow anywhere is reported, never wrapped. */
  tg_bhwc huge = {1u << 31, 1u << 31, 1u << 31, 4};
  assert_int_equal(tg_storage_extent(huge, TG_STORAGE_BUFFER, TG_PRECISION_FP32, &e), TG_ERROR_OVERFLOW);
  assert_int_equal(tg_storage_extent(huge, TG_STORAGE_TEXTURE_3D, TG_PRECISION_FP32, &e), TG_ERROR_OVERFLOW);
  tg_bhwc wide = {UINT64_MAX, 1, 2, 4};
  assert_int_equal(tg_storage_extent(wide, TG_STORAGE_TEXTURE_2D, TG_PRECISION_FP32, &e), TG_ERROR_OVERFLOW);
  assert_int_equal(tg_storage_extent(s, TG_STORAGE_COUNT, TG_PRECISION_FP32, &e), TG_ERROR_INVALID_ARGUMENT);
}

static void limits_and_reasons(void **state) {
  (void)state;
  tg_device_limits lim = tg_device_limits_default();
  assert_int_equal(lim.max_texture_2d_width, 8192);
  assert_int_equal(lim.max_buffer_bytes, 1u << 27);
  char reason[160];
  tg_extent e;
  tg_bhwc s = {1, 96, 16384, 4};
  assert_int_equal(tg_storage_check_fit(s, TG_STORAGE_TEXTURE_2D, TG_PRECISION_FP32, &lim, &e,
                                        reason, sizeof reason), TG_ERROR_LIMIT);
  assert_string_equal(reason, "extent 16384x96 exceeds max 2D 8192x8192");
  assert_int_equal(tg_storage_check_fit(s, TG_STORAGE_TEXTURE_2D, TG_PRECISION_FP32, NULL, &e,
                                        reason, sizeof reason), TG_OK);
  assert_string_equal(reason, "");
  tg_bhwc c32 = {1, 8, 8, 32};
  assert_int_equal(tg_storage_check_fit(c32, TG_STORAGE_SINGLE_TEXTURE_2D, TG_PRECISION_FP32,
                                        &lim, &e, reason, sizeof reason), TG_ERROR_UNSUPPORTED);
  assert_string_equal(reason, "C=32 > 4 for single_texture_2d");
  tg_bhwc deep = {1, 8, 8, 4 * 3000};
  assert_int_equal(tg_storage_check_fit(deep, TG_STORAGE_TEXTURE_3D, TG_PRECISION_FP32, &lim, &e,
                                        reason, sizeof reason), TG_ERROR_LIMIT);
  assert_string_equal(reason, "extent 8x8x3000 exceeds max 3D 2048x2048x2048");
  assert_int_equal(tg_storage_check_fit(deep, TG_STORAGE_TEXTURE_ARRAY, TG_PRECISION_FP32, &lim,
                                        &e, reason, sizeof reason), TG_ERROR_LIMIT);
  assert_string_equal(reason, "extent 8x8 with 3000 layers exceeds max 2D 8192x8192 with 2048 layers");
  tg_bhwc img = {1, 1, 65537, 4};
  assert_int_equal(tg_storage_check_fit(img, TG_STORAGE_IMAGE_BUFFER, TG_PRECISION_FP16, &lim,
                                        &e, reason, sizeof reason), TG_ERROR_LIMIT);
  assert_string_equal(reason, "65537 texels exceed max image buffer 65536 texels");
  img.w = 65536;
  assert_int_equal(tg_storage_check_fit(img, TG_STORAGE_IMAGE_BUFFER, TG_PRECISION_FP16, &lim,
                                        &e, reason, sizeof reason), TG_OK);
  assert_int_equal(e.w, 65536 * 8);
  tg_bhwc big = {1, 1024, 1024, 64}; /* 256 MiB in fp32 */
  assert_int_equal(tg_storage_check_fit(big, TG_STORAGE_BUFFER, TG_PRECISION_FP32, &lim, &e,
                                        reason, sizeof reason), TG_ERROR_LIMIT);
  assert_string_equal(reason, "268435456 bytes exceed max buffer 134217728 bytes");
  /* Zero fields mean "no limit". */
  tg_device_limits none;
  memset(&none, 0, sizeof none);
  assert_int_equal(tg_storage_check_fit(big, TG_STORAGE_BUFFER, TG_PRECISION_FP32, &none, &e,
                                        reason, sizeof reason), TG_OK);
}

static const char k_graph[] =
    "tensor x     1x8x8x4      float32 input\n"
    "tensor wide  1x96x16384x4 float32\n"
    "tensor c32   1x8x8x32     float32\n"
    "tensor small 1x8x8x4      float32\n"
    "tensor y     1x8x8x4      float32 output\n"
    "op A inputs=x     outputs=wide\n"
    "op B inputs=wide  outputs=c32\n"
    "op C inputs=c32   outputs=small\n"
    "op D inputs=small outputs=y\n";

static void build(tg_storage storage, const tg_device_limits *lim, tg_status want,
                  tg_model_records **out, tg_error_info *err) {
  tg_graph *g = NULL;
  tg_lifetimes *l = NULL;
  assert_int_equal(tg_graph_parse_text(k_graph, sizeof k_graph - 1, "g.graph", NULL, &g, err), TG_OK);
  assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &l, err), TG_OK);
  tg_status st = tg_model_records_create(g, l, storage, TG_PRECISION_FP32, lim, NULL, out, err);
  if (st != want) fail_msg("%s: expected %s, got %s (%s)", tg_storage_name(storage),
                           tg_status_name(want), tg_status_name(st), err->message);
  tg_lifetimes_destroy(l);
  tg_graph_destroy(g);
}

static void records_fall_back_to_buffers(void **state) {
  (void)state;
  tg_device_limits lim = tg_device_limits_default();
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_model_records *m = NULL;

  /* texture_2d: 'wide' is 16384x96 texels: too wide. */
  build(TG_STORAGE_TEXTURE_2D, &lim, TG_OK, &m, &err);
  assert_int_equal(m->records->dims, 2);
  assert_int_equal(m->records->count, 2);
  assert_string_equal(m->records->names[0], "c32");
  assert_int_equal(m->tensor_of[0], 2);
  assert_true(m->records->records[0].size.w == 8 && m->records->records[0].size.h == 64);
  assert_int_equal(m->records->records[0].first_task, 1);
  assert_int_equal(m->records->records[0].last_task, 2);
  assert_int_equal(m->fallback->dims, 1);
  assert_int_equal(m->fallback->count, 1);
  assert_string_equal(m->fallback->names[0], "wide");
  assert_int_equal(m->fallback_tensor_of[0], 1);
  assert_int_equal(m->fallback->records[0].size.w, 96ull * 16384 * 16);
  assert_int_equal(m->fallback->records[0].first_task, 0);
  assert_int_equal(m->fallback->records[0].last_task, 1);
  assert_string_equal(m->fallback_reasons[0], "extent 16384x96 exceeds max 2D 8192x8192");
  tg_model_records_destroy(m);

  /* single_texture_2d: 'wide' too wide, 'c32' has too many channels. */
  build(TG_STORAGE_SINGLE_TEXTURE_2D, &lim, TG_OK, &m, &err);
  assert_int_equal(m->records->count, 1);
  assert_string_equal(m->records->names[0], "small");
  assert_int_equal(m->fallback->count, 2);
  assert_string_equal(m->fallback->names[1], "c32");
  assert_string_equal(m->fallback_reasons[1], "C=32 > 4 for single_texture_2d");
  assert_int_equal(m->fallback->records[1].size.w, 8 * 8 * 8 * 16);
  tg_model_records_destroy(m);

  /* texture_3d: 'wide' is 16384 wide, over the 3D limit of 2048. texture_array: fits. */
  build(TG_STORAGE_TEXTURE_3D, &lim, TG_OK, &m, &err);
  assert_int_equal(m->records->dims, 3);
  assert_int_equal(m->records->count, 2);
  assert_string_equal(m->fallback_reasons[0], "extent 16384x96x1 exceeds max 3D 2048x2048x2048");
  tg_model_records_destroy(m);
  build(TG_STORAGE_TEXTURE_ARRAY, &lim, TG_OK, &m, &err);
  assert_int_equal(m->records->count, 2);
  assert_true(m->records->records[0].size.w == 8 && m->records->records[0].size.h == 8 &&
              m->records->records[0].size.d == 8);
  assert_string_equal(m->fallback_reasons[0],
                      "extent 16384x96 with 1 layers exceeds max 2D 8192x8192 with 2048 layers");
  tg_model_records_destroy(m);
  /* Without limits everything fits. */
  build(TG_STORAGE_TEXTURE_2D, NULL, TG_OK, &m, &err);
  assert_int_equal(m->records->count, 3);
  tg_model_records_destroy(m);

  /* image_buffer: 'wide' has 1572864 texels. */
  build(TG_STORAGE_IMAGE_BUFFER, &lim, TG_OK, &m, &err);
  assert_int_equal(m->fallback->count, 1);
  assert_string_equal(m->fallback_reasons[0], "1572864 texels exceed max image buffer 65536 texels");
  tg_model_records_destroy(m);

  /* Not even a buffer fits: an error naming the tensor. */
  lim.max_buffer_bytes = 1u << 20;
  build(TG_STORAGE_BUFFER, &lim, TG_ERROR_LIMIT, &m, &err);
  assert_null(m);
  assert_string_equal(err.message, "g.graph: tensor 'wide': 25165824 bytes exceed max buffer 1048576 bytes");
  build(TG_STORAGE_TEXTURE_2D, &lim, TG_ERROR_LIMIT, &m, &err);
  assert_string_equal(err.message, "g.graph: tensor 'wide': extent 16384x96 exceeds max 2D "
                                   "8192x8192, and as a buffer 25165824 bytes exceed max buffer "
                                   "1048576 bytes");
}

static const char k_chain_graph[] =
    "tensor x    1x8x8x4   float32 input\n"
    "tensor fits 1x8x8x4   float32\n"
    "tensor deep 1x4x4x64  float32\n"
    "tensor wide 1x1x128x4 float32\n"
    "tensor huge 1x1x512x4 float32\n"
    "tensor y    1x8x8x4   float32 output\n"
    "op A inputs=x    outputs=fits\n"
    "op Z inputs=fits outputs=deep\n"
    "op B inputs=deep outputs=wide\n"
    "op C inputs=wide outputs=huge\n"
    "op D inputs=huge outputs=y\n";

/* A small device: 2D 64x64, 3D 64x64x8, 8 layers, 256-texel image buffers. */
static tg_device_limits chain_limits(void) {
  tg_device_limits lim = tg_device_limits_default();
  lim.max_texture_2d_width = lim.max_texture_2d_height = 64;
  lim.max_texture_3d_width = lim.max_texture_3d_height = 64;
  lim.max_texture_3d_depth = 8;
  lim.max_texture_array_layers = 8;
  lim.max_image_buffer_texels = 256;
  return lim;
}

static tg_model_records *build_chain(tg_storage storage, int chain, const tg_device_limits *lim) {
  tg_graph *g = NULL;
  tg_lifetimes *l = NULL;
  tg_model_records *m = NULL;
  tg_error_info err;
  memset(&err, 0, sizeof err);
  assert_int_equal(tg_graph_parse_text(k_chain_graph, sizeof k_chain_graph - 1, "c.graph", NULL, &g, &err), TG_OK);
  assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err), TG_OK);
  tg_status st = chain ? tg_model_records_create_chain(g, l, storage, TG_PRECISION_FP32, lim, NULL, &m, &err)
                       : tg_model_records_create(g, l, storage, TG_PRECISION_FP32, lim, NULL, &m, &err);
  if (st != TG_OK) fail_msg("%s: %s", tg_storage_name(storage), err.message);
  tg_lifetimes_destroy(l);
  tg_graph_destroy(g);
  return m;
}

static void group_is(const tg_model_records *m, tg_storage s, size_t count, const char *first, uint32_t tensor) {
  const tg_model_fallback *f = &m->fallbacks[s];
  if (count == 0) {
    assert_true(f->records == NULL || f->records->count == 0);
    return;
  }
  assert_non_null(f->records);
  assert_int_equal(f->records->count, count);
  assert_int_equal(f->records->dims, tg_storage_dims(s));
  assert_string_equal(f->records->names[0], first);
  assert_int_equal(f->tensor_of[0], tensor);
}

static void records_fall_along_the_chain(void **state) {
  (void)state;
  assert_int_equal(tg_storage_fallback_next(TG_STORAGE_TEXTURE_ARRAY), TG_STORAGE_TEXTURE_2D);
  assert_int_equal(tg_storage_fallback_next(TG_STORAGE_TEXTURE_3D), TG_STORAGE_TEXTURE_2D);
  assert_int_equal(tg_storage_fallback_next(TG_STORAGE_TEXTURE_2D), TG_STORAGE_IMAGE_BUFFER);
  assert_int_equal(tg_storage_fallback_next(TG_STORAGE_SINGLE_TEXTURE_2D), TG_STORAGE_IMAGE_BUFFER);
  assert_int_equal(tg_storage_fallback_next(TG_STORAGE_IMAGE_BUFFER), TG_STORAGE_BUFFER);
  assert_int_equal(tg_storage_fallback_next(TG_STORAGE_BUFFER), TG_STORAGE_COUNT);
  assert_int_equal(tg_storage_fallback_next(TG_STORAGE_COUNT), TG_STORAGE_COUNT);
  /* The storages fallen to, in chain order; the textures are the storages of 2D/3D records. */
  assert_int_equal(tg_storage_fallback_at(0), TG_STORAGE_TEXTURE_2D);
  assert_int_equal(tg_storage_fallback_at(1), TG_STORAGE_IMAGE_BUFFER);
  assert_int_equal(tg_storage_fallback_at(2), TG_STORAGE_BUFFER);
  assert_int_equal(tg_storage_fallback_at(TG_STORAGE_FALLBACK_COUNT), TG_STORAGE_COUNT);
  for (int s = 0; s <= TG_STORAGE_COUNT; ++s) {
    const int texture = s == TG_STORAGE_TEXTURE_2D || s == TG_STORAGE_TEXTURE_ARRAY || s == TG_STORAGE_TEXTURE_3D ||
                        s == TG_STORAGE_SINGLE_TEXTURE_2D;
    assert_int_equal(tg_storage_is_texture((tg_storage)s), texture);
  }
  const tg_device_limits lim = chain_limits();

  /* texture_array: 'deep' has 16 layers (> 8): a 4x64 2D texture; 'wide' is 128 texels wide:
   * an image buffer of 128 texels; 'huge' has 512 texels (> 256): a buffer. */
  tg_model_records *m = build_chain(TG_STORAGE_TEXTURE_ARRAY, 1, &lim);
  assert_int_equal(m->records->count, 1);
  assert_string_equal(m->records->names[0], "fits");
  group_is(m, TG_STORAGE_TEXTURE_2D, 1, "deep", 2);
  const tg_usage_record *d = &m->fallbacks[TG_STORAGE_TEXTURE_2D].records->records[0];
  assert_true(d->size.w == 4 && d->size.h == 64 && d->size.d == 1);
  assert_int_equal(d->first_task, 1);
  assert_int_equal(d->last_task, 2);
  assert_string_equal(m->fallbacks[TG_STORAGE_TEXTURE_2D].reasons[0],
                      "extent 4x4 with 16 layers exceeds max 2D 64x64 with 8 layers");
  group_is(m, TG_STORAGE_IMAGE_BUFFER, 1, "wide", 3);
  assert_int_equal(m->fallbacks[TG_STORAGE_IMAGE_BUFFER].records->records[0].size.w, 128 * 16);
  assert_string_equal(m->fallbacks[TG_STORAGE_IMAGE_BUFFER].reasons[0],
                      "extent 128x1 with 1 layers exceeds max 2D 64x64 with 8 layers; as texture_2d: "
                      "extent 128x1 exceeds max 2D 64x64");
  group_is(m, TG_STORAGE_BUFFER, 1, "huge", 4);
  assert_ptr_equal(m->fallbacks[TG_STORAGE_BUFFER].records, m->fallback);
  assert_ptr_equal(m->fallbacks[TG_STORAGE_BUFFER].tensor_of, m->fallback_tensor_of);
  assert_int_equal(m->fallback->records[0].size.w, 512 * 16);
  assert_string_equal(m->fallback_reasons[0],
                      "extent 512x1 with 1 layers exceeds max 2D 64x64 with 8 layers; as texture_2d: "
                      "extent 512x1 exceeds max 2D 64x64; as image_buffer: 512 texels exceed max "
                      "image buffer 256 texels");
  assert_int_equal(tg_model_records_fallback_count(m), 3);
  tg_model_records_destroy(m);

  /* texture_3d: the same, 'deep' over the depth of 8. */
  m = build_chain(TG_STORAGE_TEXTURE_3D, 1, &lim);
  group_is(m, TG_STORAGE_TEXTURE_2D, 1, "deep", 2);
  assert_string_equal(m->fallbacks[TG_STORAGE_TEXTURE_2D].reasons[0], "extent 4x4x16 exceeds max 3D 64x64x8");
  group_is(m, TG_STORAGE_IMAGE_BUFFER, 1, "wide", 3);
  group_is(m, TG_STORAGE_BUFFER, 1, "huge", 4);
  tg_model_records_destroy(m);

  /* texture_2d: 'deep' fits (4x64); no step above 2D. */
  m = build_chain(TG_STORAGE_TEXTURE_2D, 1, &lim);
  assert_int_equal(m->records->count, 2);
  group_is(m, TG_STORAGE_TEXTURE_2D, 0, NULL, 0);
  group_is(m, TG_STORAGE_IMAGE_BUFFER, 1, "wide", 3);
  group_is(m, TG_STORAGE_BUFFER, 1, "huge", 4);
  tg_model_records_destroy(m);

  /* image_buffer: only 'huge' falls, to a buffer. buffer: nothing falls. */
  m = build_chain(TG_STORAGE_IMAGE_BUFFER, 1, &lim);
  assert_int_equal(m->records->count, 3);
  group_is(m, TG_STORAGE_BUFFER, 1, "huge", 4);
  assert_int_equal(tg_model_records_fallback_count(m), 1);
  tg_model_records_destroy(m);
  m = build_chain(TG_STORAGE_BUFFER, 1, &lim);
  assert_int_equal(m->records->count, 4);
  assert_int_equal(tg_model_records_fallback_count(m), 0);
  tg_model_records_destroy(m);

  /* Without the chain every fallback tensor is a buffer. */
  m = build_chain(TG_STORAGE_TEXTURE_ARRAY, 0, &lim);
  group_is(m, TG_STORAGE_TEXTURE_2D, 0, NULL, 0);
  group_is(m, TG_STORAGE_IMAGE_BUFFER, 0, NULL, 0);
  group_is(m, TG_STORAGE_BUFFER, 3, "deep", 2);
  assert_string_equal(m->fallback_reasons[0], "extent 4x4 with 16 layers exceeds max 2D 64x64 with 8 layers");
  tg_model_records_destroy(m);

  /* Not even a buffer: the error names every step. */
  tg_device_limits tiny = lim;
  tiny.max_buffer_bytes = 4096;
  tg_graph *g = NULL;
  tg_lifetimes *l = NULL;
  tg_error_info err;
  memset(&err, 0, sizeof err);
  assert_int_equal(tg_graph_parse_text(k_chain_graph, sizeof k_chain_graph - 1, "c.graph", NULL, &g, &err), TG_OK);
  assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err), TG_OK);
  assert_int_equal(tg_model_records_create_chain(g, l, TG_STORAGE_TEXTURE_2D, TG_PRECISION_FP32, &tiny, NULL, &m,
                                                 &err), TG_ERROR_LIMIT);
  assert_null(m);
  assert_string_equal(err.message, "c.graph: tensor 'huge': extent 512x1 exceeds max 2D 64x64; as image_buffer: "
                                   "512 texels exceed max image buffer 256 texels, and as a buffer 8192 bytes "
                                   "exceed max buffer 4096 bytes");
  /* Out of memory at every allocation: nothing leaks. */
  for (uint64_t fail_at = 1;; ++fail_at) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, fail_at);
    tg_status st = tg_model_records_create_chain(g, l, TG_STORAGE_TEXTURE_3D, TG_PRECISION_FP32, &lim, &fa.base,
                                                 &m, &err);
    tg_model_records_destroy(m);
    m = NULL;
    if (tg_test_walk_step(&fa, st, TG_OK)) break;
  }
  tg_lifetimes_destroy(l);
  tg_graph_destroy(g);
}

static void out_of_memory_while_building(void **state) {
  (void)state;
  tg_graph *g = NULL;
  tg_lifetimes *l = NULL;
  tg_error_info err;
  memset(&err, 0, sizeof err);
  assert_int_equal(tg_graph_parse_text(k_graph, sizeof k_graph - 1, "g.graph", NULL, &g, &err), TG_OK);
  assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err), TG_OK);
  tg_device_limits lim = tg_device_limits_default();
  for (uint64_t fail_at = 1;; ++fail_at) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, fail_at);
    tg_model_records *m = NULL;
    tg_status st = tg_model_records_create(g, l, TG_STORAGE_SINGLE_TEXTURE_2D, TG_PRECISION_FP16,
                                           &lim, &fa.base, &m, &err);
    tg_model_records_destroy(m);
    if (tg_test_walk_step(&fa, st, TG_OK)) break;
    assert_null(m);
  }
  tg_lifetimes_destroy(l);
  tg_graph_destroy(g);
}

static void mismatched_inputs_are_rejected(void **state) {
  (void)state;
  tg_graph *g = NULL;
  tg_lifetimes *l = NULL;
  tg_model_records *m = NULL;
  tg_error_info err;
  memset(&err, 0, sizeof err);
  assert_int_equal(tg_graph_parse_text(k_graph, sizeof k_graph - 1, "g.graph", NULL, &g, &err), TG_OK);
  assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err), TG_OK);
  assert_int_equal(tg_model_records_create(g, l, TG_STORAGE_COUNT, TG_PRECISION_FP32, NULL, NULL,
                                           &m, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_model_records_create(g, NULL, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL,
                                           NULL, &m, &err), TG_ERROR_INVALID_ARGUMENT);
  l->tensor_count--;
  assert_int_equal(tg_model_records_create(g, l, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL, NULL,
                                           &m, &err), TG_ERROR_INVALID_ARGUMENT);
  l->tensor_count++;
  assert_null(m);
  tg_model_records_destroy(NULL);
  tg_lifetimes_destroy(l);
  tg_graph_destroy(g);
}

TG_TEST_MAIN(cmocka_unit_test(names_round_trip), cmocka_unit_test(shapes_map_to_bhwc),
             cmocka_unit_test(extents_per_storage), cmocka_unit_test(limits_and_reasons),
             cmocka_unit_test(records_fall_back_to_buffers),
             cmocka_unit_test(records_fall_along_the_chain),
             cmocka_unit_test(out_of_memory_while_building),
             cmocka_unit_test(mismatched_inputs_are_rejected))
