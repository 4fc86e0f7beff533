/* Ranges of input sizes: parsing, the grid's numbering, and records over a range, whose sizes
 * must come back exactly as given at every point whatever form they take. */
#include "support/tg_test.h"

#include <stdlib.h>
#include <string.h>

#include "tangram/range.h"

static void parses_ranges(void **state) {
  (void)state;
  tg_dim_range d;
  char err[256];
  assert_int_equal(tg_dim_range_parse("32..1600/8", &d, err, sizeof err), TG_OK);
  assert_true(d.lo == 32 && d.hi == 1600 && d.step == 8);
  assert_int_equal(tg_dim_range_parse("1..1", &d, err, sizeof err), TG_OK);
  assert_true(d.lo == 1 && d.hi == 1 && d.step == 1);
  assert_int_equal(tg_dim_range_parse("0..9223372036854775807", &d, err, sizeof err), TG_OK);
  assert_true(d.lo == 0 && d.hi == INT64_MAX && d.step == 1);
  /* A HI off the step grid is fine: the last point is the largest one <= HI. */
  assert_int_equal(tg_dim_range_parse("32..100/32", &d, NULL, 0), TG_OK);
  tg_size_range r = {1, {d, {0, 0, 0}}};
  assert_int_equal(tg_size_range_point_count(&r), 3);
}

static void expect_parse_error(const char *text, const char *words) {
  tg_dim_range d = {7, 8, 9};
  char err[256] = "";
  assert_int_equal(tg_dim_range_parse(text, &d, err, sizeof err), TG_ERROR_INVALID_ARGUMENT);
  if (strstr(err, words) == NULL) fail_msg("'%s': message '%s' lacks '%s'", text, err, words);
  assert_true(d.lo == 7 && d.hi == 8 && d.step == 9); /* untouched */
}

static void refuses_bad_ranges(void **state) {
  (void)state;
  expect_parse_error("5..3", "LO 5 is above HI 3");
  expect_parse_error("1..9/0", "STEP must be at least 1");
  expect_parse_error("abc", "is not a range");
  expect_parse_error("", "is not a range");
  expect_parse_error("1..", "is not a range");
  expect_parse_error("..5", "is not a range");
  expect_parse_error("1..5/", "is not a range");
  expect_parse_error(" 1..5", "is not a range");
  expect_parse_error("1..5 ", "is not a range");
  expect_parse_error("-1..5", "is not a range");
  expect_parse_error("1...5", "is not a range");
  expect_parse_error("1..5/2/3", "is not a range");
  expect_parse_error("1.5", "is not a range");
  expect_parse_error("+1..5", "is not a range");
  expect_parse_error("9223372036854775808..9223372036854775809", "LO does not fit 63 bits");
  expect_parse_error("1..99999999999999999999", "HI does not fit 63 bits");
  expect_parse_error("1..9/99999999999999999999", "STEP does not fit 63 bits");
  assert_int_equal(tg_dim_range_parse(NULL, NULL, NULL, 0), TG_ERROR_INVALID_ARGUMENT);
}

static void checks_ranges(void **state) {
  (void)state;
  char err[256];
  tg_size_range r = {2, {{32, 960, 32}, {32, 960, 32}}};
  assert_int_equal(tg_size_range_check(&r, err, sizeof err), TG_OK);
  assert_int_equal(tg_size_range_point_count(&r), 900);
  r.count = 0;
  assert_int_equal(tg_size_range_check(&r, err, sizeof err), TG_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "1 or 2"));
  assert_int_equal(tg_size_range_point_count(&r), 0);
  r.count = 3;
  assert_int_equal(tg_size_range_check(&r, NULL, 0), TG_ERROR_INVALID_ARGUMENT);
  r.count = 2;
  r.dim[1].step = 0;
  assert_int_equal(tg_size_range_check(&r, err, sizeof err), TG_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "dimension 1: STEP 0"));
  r.dim[1] = (tg_dim_range){-4, 5, 1};
  assert_int_equal(tg_size_range_check(&r, err, sizeof err), TG_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "negative"));
  r.dim[1] = (tg_dim_range){6, 5, 1};
  assert_int_equal(tg_size_range_check(&r, err, sizeof err), TG_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "above HI"));
  r.dim[0] = r.dim[1] = (tg_dim_range){0, INT64_MAX, 1};
  assert_int_equal(tg_size_range_check(&r, err, sizeof err), TG_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "64 bits"));
  assert_int_equal(tg_size_range_point_count(&r), 0);
  assert_int_equal(tg_size_range_check(NULL, NULL, 0), TG_ERROR_INVALID_ARGUMENT);
}

static void points_and_indices_round_trip(void **state) {
  (void)state;
  tg_size_range one = {1, {{32, 1600, 8}}};
  assert_int_equal(tg_size_range_point_count(&one), 197);
  int64_t dims[2];
  uint64_t index;
  for (uint64_t p = 0; p < 197; ++p) {
    assert_int_equal(tg_size_range_point(&one, p, dims), TG_OK);
    assert_true(dims[0] == 32 + 8 * (int64_t)p);
    assert_int_equal(tg_size_range_index(&one, dims, &index), TG_OK);
    assert_true(index == p);
  }
  assert_int_equal(tg_size_range_point(&one, 197, dims), TG_ERROR_INVALID_ARGUMENT);
  dims[0] = 36; /* off the step */
  assert_int_equal(tg_size_range_index(&one, dims, &index), TG_ERROR_INVALID_ARGUMENT);
  dims[0] = 24;
  assert_int_equal(tg_size_range_index(&one, dims, &index), TG_ERROR_INVALID_ARGUMENT);
  dims[0] = 1608;
  assert_int_equal(tg_size_range_index(&one, dims, &index), TG_ERROR_INVALID_ARGUMENT);

  tg_size_range two = {2, {{32, 96, 32}, {1, 5, 2}}};
  assert_int_equal(tg_size_range_point_count(&two), 9);
  const int64_t expect[9][2] = {{32, 1}, {32, 3}, {32, 5}, {64, 1}, {64, 3},
                                {64, 5}, {96, 1}, {96, 3}, {96, 5}};
  for (uint64_t p = 0; p < 9; ++p) {
    assert_int_equal(tg_size_range_point(&two, p, dims), TG_OK);
    assert_true(dims[0] == expect[p][0] && dims[1] == expect[p][1]);
    assert_int_equal(tg_size_range_index(&two, dims, &index), TG_OK);
    assert_true(index == p);
  }
  dims[0] = 64;
  dims[1] = 4;
  assert_int_equal(tg_size_range_index(&two, dims, &index), TG_ERROR_INVALID_ARGUMENT);
}

/* Sizes of one kind: constant, affine, bilinear, ceil-divided (a table), random (a table),
 * near 2^64 (wrapping coefficients must still be exact) or decreasing. */
static uint64_t size_of_kind(int kind, uint64_t seed, int64_t x, int64_t y) {
  uint64_t a = seed % 1000u + 1u, b = seed / 1000u % 97u;
  switch (kind) {
    case 0: return a;
    case 1: return a + b * (uint64_t)x + 3u * (uint64_t)y;
    case 2: return a + b * (uint64_t)x * (uint64_t)y;
    case 3: return a * (((uint64_t)x + 31u) / 32u) + b;
    case 4: {
      uint64_t h = seed ^ ((uint64_t)x * 0x9E3779B97F4A7C15u) ^ ((uint64_t)y << 17);
      h ^= h >> 29;
      h *= 0xBF58476D1CE4E5B9u;
      return h ^ (h >> 32);
    }
    case 5: return UINT64_MAX - a * (uint64_t)x - (uint64_t)y;
    default: return 1000000u - a * (uint64_t)x;
  }
}

static tg_range_records *make_records(const tg_size_range *range, uint32_t dims, size_t n, uint64_t seed,
                                      tg_extent **sizes_out, int with_alignment) {
  uint64_t points = tg_size_range_point_count(range);
  tg_extent *sizes = calloc(points * n, sizeof *sizes);
  uint32_t *first = calloc(n, sizeof *first), *last = calloc(n, sizeof *last);
  uint64_t *align = calloc(n, sizeof *align);
  assert_non_null(sizes);
  tg_test_rng rng = {seed};
  int kinds[3 * 64];
  uint64_t seeds[3 * 64];
  assert_true(n <= 64);
  for (size_t r = 0; r < n; ++r) {
    first[r] = (uint32_t)tg_test_rng_range(&rng, 0, 20);
    last[r] = first[r] + (uint32_t)tg_test_rng_range(&rng, 0, 5);
    align[r] = (uint64_t)1 << tg_test_rng_range(&rng, 0, 8);
    for (uint32_t a = 0; a < dims; ++a) {
      kinds[3 * r + a] = (int)tg_test_rng_range(&rng, 0, 6);
      seeds[3 * r + a] = tg_test_rng_next(&rng) % 100000u;
    }
  }
  for (uint64_t p = 0; p < points; ++p) {
    int64_t d[2] = {0, 0};
    assert_int_equal(tg_size_range_point(range, p, d), TG_OK);
    for (size_t r = 0; r < n; ++r) {
      uint64_t v[3] = {1, 1, 1};
      for (uint32_t a = 0; a < dims; ++a) v[a] = size_of_kind(kinds[3 * r + a], seeds[3 * r + a], d[0], d[1]);
      sizes[p * n + r] = (tg_extent){v[0], v[1], v[2]};
    }
  }
  tg_range_records_desc desc = {*range, dims, n, first, last, sizes, with_alignment ? align : NULL};
  tg_range_records *rr = NULL;
  assert_int_equal(tg_range_records_create(&desc, NULL, &rr), TG_OK);
  free(first);
  free(last);
  free(align);
  *sizes_out = sizes;
  return rr;
}

static void check_records_equal_table(const tg_range_records *rr, const tg_extent *sizes, size_t n) {
  const tg_size_range *range = tg_range_records_range(rr);
  uint64_t points = tg_size_range_point_count(range);
  tg_usage_record out[64];
  for (uint64_t p = 0; p < points; ++p) {
    int64_t d[2];
    assert_int_equal(tg_size_range_point(range, p, d), TG_OK);
    assert_int_equal(tg_range_records_at(rr, d, out), TG_OK);
    for (size_t r = 0; r < n; ++r) {
      const tg_extent *e = &sizes[p * n + r];
      if (out[r].size.w != e->w || out[r].size.h != e->h || out[r].size.d != e->d)
        fail_msg("point %llu record %zu: %llu x %llu x %llu, expected %llu x %llu x %llu", (unsigned long long)p,
                 r, (unsigned long long)out[r].size.w, (unsigned long long)out[r].size.h,
                 (unsigned long long)out[r].size.d, (unsigned long long)e->w, (unsigned long long)e->h,
                 (unsigned long long)e->d);
    }
  }
}

static void records_at_equal_the_table(void **state) {
  (void)state;
  const tg_size_range ranges[] = {
      {1, {{32, 1600, 8}}}, {1, {{5, 5, 1}}}, {2, {{32, 320, 32}, {32, 320, 32}}},
      {2, {{1, 1, 1}, {0, 40, 4}}}, {2, {{1, 16, 3}, {7, 7, 1}}}};
  for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; ++k) {
    for (uint32_t dims = 1; dims <= 3; ++dims) {
      tg_extent *sizes = NULL;
      size_t n = 40;
      tg_range_records *rr = make_records(&ranges[k], dims, n, 1000 + 10 * k + dims, &sizes, (int)(k & 1));
      assert_int_equal(tg_range_records_count(rr), n);
      assert_int_equal(tg_range_records_dims(rr), dims);
      check_records_equal_table(rr, sizes, n);
      tg_range_records_stats st;
      tg_range_records_get_stats(rr, &st);
      assert_int_equal(st.constant + st.affine + st.bilinear + st.table, n * dims);
      free(sizes);
      tg_range_records_destroy(rr);
    }
  }
}

/* Known forms are stored as such: a constant, affine and bilinear sizes take no table; ceil
 * steps across the grid do. */
static void sizes_are_stored_compactly(void **state) {
  (void)state;
  tg_size_range range = {2, {{32, 320, 32}, {8, 64, 8}}};
  uint64_t points = tg_size_range_point_count(&range);
  const size_t n = 5;
  tg_extent *sizes = calloc(points * n, sizeof *sizes);
  uint32_t first[5] = {0, 1, 2, 3, 4}, last[5] = {1, 2, 3, 4, 5};
  for (uint64_t p = 0; p < points; ++p) {
    int64_t d[2];
    assert_int_equal(tg_size_range_point(&range, p, d), TG_OK);
    uint64_t h = (uint64_t)d[0], w = (uint64_t)d[1];
    sizes[p * n + 0] = (tg_extent){4096, 1, 1};
    sizes[p * n + 1] = (tg_extent){9216 * w, 1, 1};
    sizes[p * n + 2] = (tg_extent){16 * h * w + 3 * h + 5, 1, 1};
    sizes[p * n + 3] = (tg_extent){64 * ((h + 63) / 64) * w, 1, 1};
    sizes[p * n + 4] = (tg_extent){1000000 - 100 * w, 1, 1};
  }
  tg_range_records_desc desc = {range, 1, n, first, last, sizes, NULL};
  tg_range_records *rr = NULL;
  assert_int_equal(tg_range_records_create(&desc, NULL, &rr), TG_OK);
  tg_range_records_stats st;
  tg_range_records_get_stats(rr, &st);
  assert_int_equal(st.constant, 1);
  assert_int_equal(st.affine, 2);
  assert_int_equal(st.bilinear, 1);
  assert_int_equal(st.table, 1);
  check_records_equal_table(rr, sizes, n);
  tg_usage_record out[5];
  int64_t d[2] = {320, 64};
  assert_int_equal(tg_range_records_at(rr, d, out), TG_OK);
  assert_true(out[3].size.w == 64 * 5 * 64 && out[3].first_task == 3 && out[3].last_task == 4);
  assert_true(out[4].alignment == 0);
  d[1] = 60;
  out[0].size.w = 77;
  assert_int_equal(tg_range_records_at(rr, d, out), TG_ERROR_INVALID_ARGUMENT);
  assert_true(out[0].size.w == 77);
  assert_int_equal(tg_range_records_at_index(rr, points, out), TG_ERROR_INVALID_ARGUMENT);
  free(sizes);
  tg_range_records_destroy(rr);
}

static void refuses_bad_records(void **state) {
  (void)state;
  tg_size_range range = {1, {{1, 4, 1}}};
  uint32_t first[2] = {0, 3}, last[2] = {2, 4};
  tg_extent sizes[8];
  for (int k = 0; k < 8; ++k) sizes[k] = (tg_extent){(uint64_t)k + 1, 1, 1};
  tg_range_records_desc desc = {range, 1, 2, first, last, sizes, NULL};
  tg_range_records *rr = NULL;
  assert_int_equal(tg_range_records_create(&desc, NULL, &rr), TG_OK);
  tg_range_records_destroy(rr);
  tg_range_records_desc bad = desc;
  bad.dims = 0;
  assert_int_equal(tg_range_records_create(&bad, NULL, &rr), TG_ERROR_INVALID_ARGUMENT);
  assert_null(rr);
  bad = desc;
  bad.dims = 4;
  assert_int_equal(tg_range_records_create(&bad, NULL, &rr), TG_ERROR_INVALID_ARGUMENT);
  bad = desc;
  bad.range.dim[0].step = 0;
  assert_int_equal(tg_range_records_create(&bad, NULL, &rr), TG_ERROR_INVALID_ARGUMENT);
  bad = desc;
  bad.sizes = NULL;
  assert_int_equal(tg_range_records_create(&bad, NULL, &rr), TG_ERROR_INVALID_ARGUMENT);
  uint32_t swapped[2] = {3, 3};
  bad = desc;
  bad.first_task = swapped;
  bad.last_task = first; /* record 0: 3 > 0 */
  assert_int_equal(tg_range_records_create(&bad, NULL, &rr), TG_ERROR_INVALID_ARGUMENT);
  sizes[5].h = 2; /* a 1D size with a height */
  assert_int_equal(tg_range_records_create(&desc, NULL, &rr), TG_ERROR_INVALID_ARGUMENT);
  assert_null(rr);
  assert_int_equal(tg_range_records_create(NULL, NULL, &rr), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_range_records_create(&desc, NULL, NULL), TG_ERROR_INVALID_ARGUMENT);
  /* No records at all is a valid (empty) set. */
  tg_range_records_desc empty = {range, 2, 0, NULL, NULL, NULL, NULL};
  assert_int_equal(tg_range_records_create(&empty, NULL, &rr), TG_OK);
  int64_t d = 3;
  assert_int_equal(tg_range_records_at(rr, &d, NULL), TG_OK);
  tg_range_records_destroy(rr);
  tg_range_records_destroy(NULL);
  assert_null(tg_range_records_range(NULL));
  assert_int_equal(tg_range_records_count(NULL), 0);
}

static void create_survives_allocation_failures(void **state) {
  (void)state;
  tg_size_range range = {2, {{1, 9, 1}, {2, 8, 2}}};
  uint64_t points = tg_size_range_point_count(&range);
  const size_t n = 3;
  tg_extent *sizes = calloc(points * n, sizeof *sizes);
  uint32_t first[3] = {0, 1, 2}, last[3] = {1, 2, 3};
  uint64_t align[3] = {0, 64, 256};
  for (uint64_t p = 0; p < points * n; ++p) sizes[p] = (tg_extent){(p * 7919u) % 101u, 1, 1};
  tg_range_records_desc desc = {range, 1, n, first, last, sizes, align};
  for (uint64_t at = 1;; ++at) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, at);
    tg_range_records *rr = NULL;
    tg_status st = tg_range_records_create(&desc, &fa.base, &rr);
    if (st == TG_OK) {
      check_records_equal_table(rr, sizes, n);
      tg_usage_record out[3];
      assert_int_equal(tg_range_records_at_index(rr, 0, out), TG_OK);
      assert_true(out[2].alignment == 256);
      tg_range_records_destroy(rr);
      assert_int_equal(fa.live_blocks, 0);
      break;
    }
    assert_int_equal(st, TG_ERROR_OUT_OF_HOST_MEMORY);
    assert_null(rr);
    assert_int_equal(fa.live_blocks, 0);
    assert_true(at < 20);
  }
  free(sizes);
}

TG_TEST_MAIN(cmocka_unit_test(parses_ranges), cmocka_unit_test(refuses_bad_ranges),
             cmocka_unit_test(checks_ranges), cmocka_unit_test(points_and_indices_round_trip),
             cmocka_unit_test(records_at_equal_the_table),
             cmocka_unit_test(sizes_are_stored_compactly), cmocka_unit_test(refuses_bad_records),
             cmocka_unit_test(create_survives_allocation_failures))
