/* Plans over a range of sizes: hand-made cases whose structure and totals are known, texture
 * extents per axis, in-place pairs kept only where they hold at every size, the allocation cap,
 * instantiation without allocation, allocation failures while computing, and random records
 * whose sizes are affine or piecewise in one or two dimensions, where every instantiation must
 * pass the validator at every size (TANGRAM_TEST_DEEP=1: many more and larger). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "support/tg_test.h"
#include "tangram/range.h"
#include "tangram/range_plan.h"

/* Records over `range` from a size function. */
typedef tg_extent (*size_fn)(size_t r, const int64_t *dims, void *user);

static tg_range_records *make_range(const tg_size_range *range, uint32_t dims, size_t n, const uint32_t *first,
                                    const uint32_t *last, const uint64_t *align, size_fn f, void *user) {
  uint64_t points = tg_size_range_point_count(range);
  tg_extent *sizes = calloc(points * (n ? n : 1), sizeof *sizes);
  assert_non_null(sizes);
  for (uint64_t p = 0; p < points; ++p) {
    int64_t d[2] = {0, 0};
    assert_int_equal(tg_size_range_point(range, p, d), TG_OK);
    for (size_t r = 0; r < n; ++r) sizes[p * n + r] = f(r, d, user);
  }
  tg_range_records_desc desc = {*range, dims, n, first, last, sizes, align};
  tg_range_records *rr = NULL;
  assert_int_equal(tg_range_records_create(&desc, NULL, &rr), TG_OK);
  free(sizes);
  return rr;
}

/* Every size: instantiate, validate, and check the figures' order lower <= own <= total <=
 * upper and the instance's total against the report. Returns the largest ratio seen. */
static double check_every_size(const tg_range_plan *plan, const tg_range_records *rr, uint64_t alignment,
                               const tg_share_relation *rel) {
  const tg_size_range *range = tg_range_records_range(rr);
  size_t n = tg_range_records_count(rr);
  uint32_t dims = tg_range_records_dims(rr);
  uint64_t points = tg_size_range_point_count(range);
  tg_usage_record *recs = calloc(n ? n : 1, sizeof *recs);
  tg_plan *inst = NULL;
  assert_int_equal(tg_range_plan_create_instance(plan, NULL, &inst), TG_OK);
  double worst = 0.0;
  for (uint64_t p = 0; p < points; ++p) {
    tg_range_point_report rep;
    assert_int_equal(tg_range_plan_get_point(plan, p, &rep), TG_OK);
    assert_int_equal(tg_range_plan_instantiate(plan, rep.dims, recs, inst), TG_OK);
    tg_test_assert_valid(recs, n, dims, inst, alignment, rel);
    if (inst->total != rep.total)
      fail_msg("size %lld: instance total %llu, report %llu", (long long)rep.dims[0],
               (unsigned long long)inst->total, (unsigned long long)rep.total);
    if (!(rep.lower_bound <= rep.own_total && rep.own_total <= rep.total && rep.total <= rep.upper_bound_total))
      fail_msg("size %lld: lower %llu own %llu total %llu upper %llu", (long long)rep.dims[0],
               (unsigned long long)rep.lower_bound, (unsigned long long)rep.own_total,
               (unsigned long long)rep.total, (unsigned long long)rep.upper_bound_total);
    double r = rep.own_total ? (double)rep.total / (double)rep.own_total : 1.0;
    if (r > worst) worst = r;
  }
  tg_range_plan_summary s;
  tg_range_plan_get_summary(plan, &s);
  assert_true(s.worst_ratio >= worst - 1e-12 && s.worst_ratio <= worst + 1e-12);
  assert_int_equal(s.above_upper_bound, 0);
  assert_int_equal(s.point_count, points);
  /* Pieces tile the grid. */
  uint64_t covered = 0;
  for (size_t k = 0; k < s.piece_count; ++k) {
    tg_range_piece pc;
    assert_int_equal(tg_range_plan_get_piece(plan, k, &pc), TG_OK);
    covered += tg_size_range_point_count(&pc.range);
    for (uint64_t p = 0; p < points; ++p) {
      tg_range_point_report rep;
      tg_range_plan_get_point(plan, p, &rep);
      uint64_t index;
      int inside = tg_size_range_index(&pc.range, rep.dims, &index) == TG_OK;
      assert_int_equal(inside, rep.piece == k);
    }
  }
  assert_true(covered == points);
  tg_plan_destroy(inst);
  free(recs);
  return worst;
}

/* Offsets: A [0,1] 100 bytes, B [1,2] 10 W, C [2,3] 50. B must lie above both (or below both):
 * every size's best is 100 + 10 W, the peak live. */
static tg_extent abc_sizes(size_t r, const int64_t *d, void *user) {
  (void)user;
  const uint64_t v[3] = {100, 10 * (uint64_t)d[0], 50};
  return (tg_extent){v[r], 1, 1};
}

static tg_range_records *abc_range(int64_t lo, int64_t hi) {
  tg_size_range range = {1, {{lo, hi, 1}}};
  const uint32_t first[3] = {0, 1, 2}, last[3] = {1, 2, 3};
  return make_range(&range, 1, 3, first, last, NULL, abc_sizes, NULL);
}

/* `best` over rr in `mode`, otherwise default options: the plan, asserted computed. */
static tg_range_plan *best_range_plan(const tg_range_records *rr, tg_mode mode) {
  tg_plan_options o = {0};
  o.mode = mode;
  o.strategy = TG_STRATEGY_BEST;
  tg_range_plan *plan = NULL;
  assert_int_equal(tg_range_plan_compute(rr, &o, NULL, NULL, &plan, NULL), TG_OK);
  return plan;
}

/* rr under o is refused with `want`, no plan, and a message that contains `text`. */
static void expect_refused(const tg_range_records *rr, const tg_plan_options *o, tg_status want,
                           const char *text) {
  tg_range_plan *plan = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_range_plan_compute(rr, o, NULL, NULL, &plan, &err), want);
  assert_null(plan);
  assert_non_null(strstr(err.message, text));
}

static void offsets_known_answer(void **state) {
  (void)state;
  tg_range_records *rr = abc_range(1, 40);
  tg_range_plan *plan = best_range_plan(rr, TG_MODE_OFFSETS);
  tg_range_plan_summary s;
  tg_range_plan_get_summary(plan, &s);
  assert_int_equal(s.piece_count, 1);
  assert_true(s.worst_ratio == 1.0);
  assert_true(s.worst_bound_ratio == 1.0);
  for (int64_t w = 1; w <= 40; ++w) {
    tg_range_point_report rep;
    assert_int_equal(tg_range_plan_get_point(plan, (uint64_t)(w - 1), &rep), TG_OK);
    assert_int_equal(rep.total, 100 + 10 * w);
    assert_int_equal(rep.lower_bound, 100 + 10 * w);
    assert_int_equal(rep.upper_bound_total, 100 + 10 * 40);
  }
  check_every_size(plan, rr, 0, NULL);
  /* Off the grid. */
  tg_plan *inst = NULL;
  tg_usage_record recs[3];
  assert_int_equal(tg_range_plan_create_instance(plan, NULL, &inst), TG_OK);
  int64_t d = 41;
  assert_int_equal(tg_range_plan_instantiate(plan, &d, recs, inst), TG_ERROR_INVALID_ARGUMENT);
  d = 0;
  assert_int_equal(tg_range_plan_instantiate(plan, &d, recs, inst), TG_ERROR_INVALID_ARGUMENT);
  d = 7;
  assert_int_equal(tg_range_plan_instantiate(plan, &d, recs, inst), TG_OK);
  assert_int_equal(inst->total, 170);
  assert_int_equal(inst->offset_of[1], 100); /* B above A (100) and C (50) */
  tg_plan_destroy(inst);
  tg_range_plan_destroy(plan);
  tg_range_records_destroy(rr);
}

/* Objects, 2D textures: T1 [0,0] of W x 4 texels and T2 [1,1] of 8 x H. One object takes
 * max(W,8) x max(4,H); two take 4W + 8H. Small sizes share, large ones do not: one structure
 * cannot keep 1.10 over the grid, so it is cut into pieces, each size within 1.10 of the best
 * of the two, with the extents of the structure chosen there. */
static tg_extent tex_sizes(size_t r, const int64_t *d, void *user) {
  (void)user;
  return r == 0 ? (tg_extent){(uint64_t)d[0], 4, 1} : (tg_extent){8, (uint64_t)d[1], 1};
}

static uint64_t u64max(uint64_t a, uint64_t b) { return a > b ? a : b; }

static void objects_texture_extents_and_pieces(void **state) {
  (void)state;
  tg_size_range range = {2, {{2, 64, 2}, {1, 32, 1}}};
  uint32_t first[2] = {0, 1}, last[2] = {0, 1};
  tg_range_records *rr = make_range(&range, 2, 2, first, last, NULL, tex_sizes, NULL);
  tg_range_plan *plan = best_range_plan(rr, TG_MODE_OBJECTS);
  tg_range_plan_summary s;
  tg_range_plan_get_summary(plan, &s);
  assert_true(s.piece_count > 1);
  assert_true(s.worst_ratio <= 1.10);
  assert_int_equal(s.max_object_count, 2);
  check_every_size(plan, rr, 0, NULL);
  tg_plan *inst = NULL;
  tg_usage_record recs[2];
  assert_int_equal(tg_range_plan_create_instance(plan, NULL, &inst), TG_OK);
  uint64_t points = tg_size_range_point_count(&range);
  for (uint64_t p = 0; p < points; ++p) {
    tg_range_point_report rep;
    tg_range_plan_get_point(plan, p, &rep);
    uint64_t w = (uint64_t)rep.dims[0], h = (uint64_t)rep.dims[1];
    uint64_t shared = u64max(w, 8) * u64max(4, h), apart = 4 * w + 8 * h;
    assert_int_equal(rep.own_total, shared < apart ? shared : apart);
    assert_int_equal(tg_range_plan_instantiate(plan, rep.dims, recs, inst), TG_OK);
    if (inst->object_count == 1) {
      assert_int_equal(inst->object_sizes[0].w, u64max(w, 8));
      assert_int_equal(inst->object_sizes[0].h, u64max(4, h));
      assert_int_equal(inst->total, shared);
    } else {
      assert_int_equal(inst->object_count, 2);
      tg_extent a = inst->object_sizes[inst->object_of[0]], b = inst->object_sizes[inst->object_of[1]];
      assert_true(a.w == w && a.h == 4 && a.d == 1);
      assert_true(b.w == 8 && b.h == h && b.d == 1);
      assert_int_equal(inst->total, apart);
    }
    assert_true((double)inst->total <= 1.10 * (double)rep.own_total);
  }
  /* At the largest size two objects are needed; at 8 x 4, one. */
  int64_t big[2] = {64, 32}, small[2] = {8, 4};
  assert_int_equal(tg_range_plan_instantiate(plan, big, recs, inst), TG_OK);
  assert_int_equal(inst->object_count, 2);
  assert_int_equal(tg_range_plan_instantiate(plan, small, recs, inst), TG_OK);
  assert_int_equal(inst->object_count, 1);
  tg_plan_destroy(inst);
  tg_range_plan_destroy(plan);
  tg_range_records_destroy(rr);
}

/* In-place: r0 -> r1 (op 1) equal at every size, r1 -> r2 (op 2) not at W = 7; r3 beside. */
static tg_extent chain_sizes(size_t r, const int64_t *d, void *user) {
  (void)user;
  uint64_t w = (uint64_t)d[0];
  const uint64_t v[4] = {100 * w, 100 * w, w == 7 ? 50 : 100 * w, 30};
  return (tg_extent){v[r], 1, 1};
}

static void in_place_pairs_hold_at_every_size(void **state) {
  (void)state;
  tg_size_range range = {1, {{1, 10, 1}}};
  uint32_t first[4] = {0, 1, 2, 0}, last[4] = {1, 2, 3, 3};
  tg_range_records *rr = make_range(&range, 1, 4, first, last, NULL, chain_sizes, NULL);
  const tg_in_place_pair pairs[2] = {{1, 0, 1, 0}, {2, 1, 2, 0}};
  for (int mode = 0; mode < 2; ++mode) {
    tg_plan_options o = {0};
    o.mode = (tg_mode)mode;
    o.strategy = TG_STRATEGY_BEST;
    o.in_place = pairs;
    o.in_place_count = 2;
    tg_range_plan *plan = NULL;
    assert_int_equal(tg_range_plan_compute(rr, &o, NULL, NULL, &plan, NULL), TG_OK);
    tg_range_plan_summary s;
    tg_range_plan_get_summary(plan, &s);
    assert_int_equal(s.in_place_kept, 1);
    assert_int_equal(s.in_place_dropped, 1);
    check_every_size(plan, rr, 0, NULL);
    tg_plan *inst = NULL;
    assert_int_equal(tg_range_plan_create_instance(plan, NULL, &inst), TG_OK);
    assert_int_equal(inst->in_place_count, 1);
    assert_int_equal(inst->in_place[0].input, 0);
    assert_int_equal(inst->in_place[0].output, 1);
    tg_usage_record recs[4];
    for (int64_t w = 1; w <= 10; ++w) {
      assert_int_equal(tg_range_plan_instantiate(plan, &w, recs, inst), TG_OK);
      if (mode == TG_MODE_OFFSETS) assert_int_equal(inst->offset_of[0], inst->offset_of[1]);
      else assert_int_equal(inst->object_of[0], inst->object_of[1]);
      /* r0/r1 share; r2 conflicts with r1 at op 2: 2 x 100 W + 30 at most. */
      if (w != 7) assert_true(inst->total <= 200 * (uint64_t)w + 30);
    }
    tg_plan_destroy(inst);
    tg_range_plan_destroy(plan);
  }
  /* A pair breaking the rules (the input does not die at the op) is refused. */
  const tg_in_place_pair bad[1] = {{2, 0, 1, 0}};
  tg_plan_options o = {0};
  o.mode = TG_MODE_OFFSETS;
  o.in_place = bad;
  o.in_place_count = 1;
  expect_refused(rr, &o, TG_ERROR_INVALID_ARGUMENT, "in-place pair 0");
  tg_range_records_destroy(rr);
}

/* The cap: held at every size, or refused naming the first size above it. */
static void max_allocation_holds_or_is_refused(void **state) {
  (void)state;
  tg_range_records *rr = abc_range(1, 40);
  tg_plan_options o = {0};
  o.mode = TG_MODE_OFFSETS;
  o.strategy = TG_STRATEGY_GREEDY_BY_SIZE;
  o.max_allocation = 500;
  tg_range_plan *plan = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_range_plan_compute(rr, &o, NULL, NULL, &plan, &err), TG_OK);
  tg_plan *inst = NULL;
  assert_int_equal(tg_range_plan_create_instance(plan, NULL, &inst), TG_OK);
  assert_int_equal(inst->max_allocation, 500);
  tg_plan_destroy(inst);
  check_every_size(plan, rr, 0, NULL);
  tg_range_plan_destroy(plan);
  /* 100 + 10 W > 450 from W = 36: the plan would need two arenas there. */
  o.max_allocation = 450;
  expect_refused(rr, &o, TG_ERROR_LIMIT, "at size 36 the plan needs 460 bytes in one arena");
  /* A record above the cap from W = 26. */
  o.max_allocation = 250;
  expect_refused(rr, &o, TG_ERROR_LIMIT, "at size 26 record 1 needs 260 bytes");
  /* Objects, 1D: each object within the cap. */
  o.mode = TG_MODE_OBJECTS;
  o.max_allocation = 400;
  assert_int_equal(tg_range_plan_compute(rr, &o, NULL, NULL, &plan, &err), TG_OK);
  check_every_size(plan, rr, 0, NULL);
  tg_range_plan_destroy(plan);
  tg_range_records_destroy(rr);
}

/* No records at all: every size plans to 0, one piece; a single-size range works too. */
static void empty_and_single_size(void **state) {
  (void)state;
  for (int mode = 0; mode < 2; ++mode) {
    tg_size_range range = {1, {{3, 9, 3}}};
    tg_range_records_desc desc = {range, 1, 0, NULL, NULL, NULL, NULL};
    tg_range_records *rr = NULL;
    assert_int_equal(tg_range_records_create(&desc, NULL, &rr), TG_OK);
    tg_range_plan *plan = best_range_plan(rr, (tg_mode)mode);
    tg_range_plan_summary s;
    tg_range_plan_get_summary(plan, &s);
    assert_int_equal(s.piece_count, 1);
    assert_true(s.worst_ratio == 1.0);
    check_every_size(plan, rr, 0, NULL);
    tg_range_plan_destroy(plan);
    tg_range_records_destroy(rr);
  }
  tg_range_records *rr = abc_range(5, 5);
  tg_range_plan *plan = best_range_plan(rr, TG_MODE_OFFSETS);
  tg_range_point_report rep;
  assert_int_equal(tg_range_plan_get_point(plan, 0, &rep), TG_OK);
  assert_int_equal(rep.total, 150);
  check_every_size(plan, rr, 0, NULL);
  tg_range_plan_destroy(plan);
  tg_range_records_destroy(rr);
}

static void refuses_bad_input(void **state) {
  (void)state;
  tg_size_range range = {2, {{1, 4, 1}, {1, 4, 1}}};
  uint32_t first[2] = {0, 1}, last[2] = {0, 1};
  tg_range_records *rr = make_range(&range, 2, 2, first, last, NULL, tex_sizes, NULL);
  tg_plan_options o = {0};
  o.mode = TG_MODE_OFFSETS;
  tg_range_plan *plan = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_range_plan_compute(rr, &o, NULL, NULL, &plan, &err), TG_ERROR_UNSUPPORTED);
  assert_non_null(strstr(err.message, "1D"));
  o.mode = TG_MODE_OBJECTS;
  o.strategy = TG_STRATEGY_ALLOCATION_TREE;
  assert_int_equal(tg_range_plan_compute(rr, &o, NULL, NULL, &plan, &err), TG_ERROR_UNSUPPORTED);
  assert_int_equal(tg_range_plan_compute(NULL, &o, NULL, NULL, &plan, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_range_plan_compute(rr, &o, NULL, NULL, NULL, &err), TG_ERROR_INVALID_ARGUMENT);
  o.strategy = TG_STRATEGY_NAIVE;
  assert_int_equal(tg_range_plan_compute(rr, &o, NULL, NULL, &plan, &err), TG_OK);
  /* An instance of another shape. */
  tg_plan *other = NULL;
  assert_int_equal(tg_plan_create(TG_MODE_OFFSETS, 1, 2, 0, NULL, &other), TG_OK);
  tg_usage_record recs[2];
  int64_t d[2] = {2, 2};
  assert_int_equal(tg_range_plan_instantiate(plan, d, recs, other), TG_ERROR_INVALID_ARGUMENT);
  tg_plan_destroy(other);
  tg_range_plan_summary s;
  tg_range_plan_get_summary(plan, &s);
  tg_range_piece pc;
  assert_int_equal(tg_range_plan_get_piece(plan, s.piece_count, &pc), TG_ERROR_INVALID_ARGUMENT);
  tg_range_point_report rep;
  assert_int_equal(tg_range_plan_get_point(plan, 16, &rep), TG_ERROR_INVALID_ARGUMENT);
  tg_range_plan_destroy(plan);
  tg_range_plan_destroy(NULL);
  tg_range_records_destroy(rr);
}

/* Random records: tasks from the test generator, sizes in one of several forms of the dynamic
 * dimensions (x, y): constant, affine, ceil-divided, bilinear, zero below a threshold. */
typedef struct random_sizes {
  uint32_t dims;
  int form[64][3];
  uint64_t a[64][3], b[64][3], k[64][3];
} random_sizes;

static uint64_t form_value(int form, uint64_t a, uint64_t b, uint64_t k, uint64_t x, uint64_t y) {
  switch (form) {
    case 0: return a;
    case 1: return a * x + b;
    case 2: return a * ((x + k - 1) / k) + b;
    case 3: return a * x * y + b;
    case 4: return a * y + b;
    default: return x > k ? a * (x - k) : 0;
  }
}

static tg_extent random_size(size_t r, const int64_t *d, void *user) {
  const random_sizes *rs = user;
  uint64_t v[3] = {1, 1, 1};
  for (uint32_t a = 0; a < rs->dims; ++a)
    v[a] = form_value(rs->form[r][a], rs->a[r][a], rs->b[r][a], rs->k[r][a], (uint64_t)d[0], (uint64_t)d[1]);
  if (rs->dims > 1)
    for (uint32_t a = 0; a < rs->dims; ++a)
      if (v[a] == 0) v[a] = 1; /* texture extents of at least one texel */
  return (tg_extent){v[0], v[1], v[2]};
}

typedef struct relation_state {
  uint64_t seed;
} relation_state;

static int hashed_may_share(void *user, size_t a, size_t b) {
  const relation_state *s = user;
  size_t lo = a < b ? a : b, hi = a < b ? b : a;
  uint64_t h = (s->seed ^ (lo * 0x9E3779B97F4A7C15u) ^ (hi * 0xC2B2AE3D27D4EB4Fu)) * 0xBF58476D1CE4E5B9u;
  return (h >> 61) != 0; /* 7 in 8 pairs may share */
}

static void random_case(uint64_t seed, size_t n, int two_dims, tg_mode mode, uint32_t dims) {
  tg_test_rng rng = {seed};
  tg_size_range range;
  memset(&range, 0, sizeof range);
  if (two_dims) {
    range.count = 2;
    range.dim[0] = (tg_dim_range){8, 8 + 8 * (int64_t)tg_test_rng_range(&rng, 1, 6), 8};
    range.dim[1] = (tg_dim_range){4, 4 + 4 * (int64_t)tg_test_rng_range(&rng, 1, 6), 4};
  } else {
    range.count = 1;
    int64_t step = (int64_t)tg_test_rng_range(&rng, 1, 8);
    range.dim[0] = (tg_dim_range){step, step * (int64_t)tg_test_rng_range(&rng, 2, 40), step};
  }
  assert_true(n <= 64);
  tg_usage_record tasks[64];
  tg_test_random_spec spec = {1, n, (uint32_t)(n / 2 + 2), 6, 10, 0, 0};
  tg_test_random_records(&rng, &spec, tasks);
  uint32_t first[64], last[64];
  uint64_t align[64];
  random_sizes rs;
  rs.dims = dims;
  for (size_t r = 0; r < n; ++r) {
    first[r] = tasks[r].first_task;
    last[r] = tasks[r].last_task;
    align[r] = tg_test_rng_range(&rng, 0, 3) == 0 ? (uint64_t)1 << tg_test_rng_range(&rng, 0, 6) : 0;
    for (uint32_t a = 0; a < dims; ++a) {
      int form = (int)tg_test_rng_range(&rng, 0, 5);
      if (!two_dims && (form == 3 || form == 4)) form = 1;
      rs.form[r][a] = form;
      rs.a[r][a] = tg_test_rng_range(&rng, 1, dims > 1 ? 8 : 1000);
      rs.b[r][a] = tg_test_rng_range(&rng, 0, dims > 1 ? 16 : 5000);
      rs.k[r][a] = tg_test_rng_range(&rng, 1, 32);
    }
  }
  int with_align = mode == TG_MODE_OFFSETS && tg_test_rng_range(&rng, 0, 1);
  tg_range_records *rr = make_range(&range, dims, n, first, last, with_align ? align : NULL, random_size, &rs);
  tg_plan_options o = {0};
  o.mode = mode;
  o.strategy = tg_test_rng_range(&rng, 0, 3) == 0 ? TG_STRATEGY_GREEDY_BY_SIZE : TG_STRATEGY_BEST;
  o.time_limit_ms = TG_TIME_LIMIT_NONE;
  o.alignment = mode == TG_MODE_OFFSETS ? (uint64_t)tg_test_rng_range(&rng, 0, 1) * 16 : 0;
  relation_state rel_state = {seed};
  tg_share_relation rel = {hashed_may_share, &rel_state, NULL, 0, NULL};
  if (tg_test_rng_range(&rng, 0, 3) == 0) o.relation = &rel;
  tg_range_plan_options ro = {0};
  if (tg_test_rng_range(&rng, 0, 2) == 0) ro.target = 1.0; /* as many pieces as it takes */
  ro.samples = (uint32_t)tg_test_rng_range(&rng, 0, 5);
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 0);
  tg_range_plan *plan = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_range_plan_compute(rr, &o, &ro, &fa.base, &plan, &err);
  if (st != TG_OK) fail_msg("seed %llu: %s: %s", (unsigned long long)seed, tg_status_name(st), err.message);
  /* Instantiation allocates nothing: any allocation from here on would fail. */
  tg_plan *inst = NULL;
  assert_int_equal(tg_range_plan_create_instance(plan, &fa.base, &inst), TG_OK);
  uint64_t before = fa.allocations;
  fa.fail_at = before + 1;
  tg_usage_record recs[64];
  uint64_t points = tg_size_range_point_count(&range);
  for (uint64_t p = 0; p < points; ++p) {
    int64_t d[2];
    tg_size_range_point(&range, p, d);
    assert_int_equal(tg_range_plan_instantiate(plan, d, recs, inst), TG_OK);
  }
  assert_true(fa.allocations == before);
  fa.fail_at = 0;
  uint64_t alignment = o.alignment;
  double worst = check_every_size(plan, rr, alignment, o.relation);
  double target = ro.target > 0 ? ro.target : (mode == TG_MODE_OFFSETS ? 1.05 : 1.10);
  if (worst > target + 1e-9) fail_msg("seed %llu: worst ratio %.4f above %.2f", (unsigned long long)seed, worst, target);
  tg_plan_destroy(inst);
  tg_range_plan_destroy(plan);
  assert_int_equal(fa.live_blocks, 0);
  tg_range_records_destroy(rr);
}

static void random_offsets_one_dim(void **state) {
  (void)state;
  int cases = tg_test_deep() ? 400 : 40;
  for (int k = 0; k < cases; ++k) random_case(100 + (uint64_t)k, 8 + (size_t)k % (tg_test_deep() ? 57 : 25), 0, TG_MODE_OFFSETS, 1);
}

static void random_offsets_two_dims(void **state) {
  (void)state;
  int cases = tg_test_deep() ? 200 : 15;
  for (int k = 0; k < cases; ++k) random_case(900 + (uint64_t)k, 8 + (size_t)k % 20, 1, TG_MODE_OFFSETS, 1);
}

static void random_objects(void **state) {
  (void)state;
  int cases = tg_test_deep() ? 300 : 30;
  for (int k = 0; k < cases; ++k)
    random_case(5000 + (uint64_t)k, 6 + (size_t)k % 18, k % 2, TG_MODE_OBJECTS, 1 + (uint32_t)k % 3);
}

static void survives_allocation_failures(void **state) {
  (void)state;
  tg_range_records *rr = abc_range(1, 6);
  const tg_in_place_pair pairs[1] = {{1, 0, 1, 0}};
  for (int mode = 0; mode < 2; ++mode) {
    tg_plan_options o = {0};
    o.mode = (tg_mode)mode;
    o.strategy = TG_STRATEGY_GREEDY_BY_SIZE;
    o.in_place = pairs; /* dropped: the sizes differ */
    o.in_place_count = 1;
    for (uint64_t at = 1;; ++at) {
      tg_failing_allocator fa;
      tg_failing_allocator_init(&fa, NULL, at);
      tg_range_plan *plan = NULL;
      tg_status st = tg_range_plan_compute(rr, &o, NULL, &fa.base, &plan, NULL);
      if (st == TG_OK) {
        check_every_size(plan, rr, 0, NULL);
        tg_range_plan_destroy(plan);
        assert_int_equal(fa.live_blocks, 0);
        break;
      }
      assert_int_equal(st, TG_ERROR_OUT_OF_HOST_MEMORY);
      assert_null(plan);
      if (fa.live_blocks != 0) fail_msg("mode %d, allocation %llu failing: %lld blocks leaked", mode,
                                        (unsigned long long)at, (long long)fa.live_blocks);
      assert_true(at < 5000);
    }
  }
  tg_range_records_destroy(rr);
}

/* Texture-like records over H x W: a chain down to stride 32 and back up with long skips, each
 * tensor (W/s ceil(C/4), H/s) texels, as a detector's. */
typedef struct texture_chain {
  uint64_t stride[240], channels[240];
} texture_chain;

static tg_extent texture_chain_size(size_t r, const int64_t *d, void *user) {
  const texture_chain *t = user;
  uint64_t s = t->stride[r], h = (uint64_t)d[0] / s, w = (uint64_t)d[1] / s;
  return (tg_extent){(w ? w : 1) * ((t->channels[r] + 3) / 4), h ? h : 1, 1};
}

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The time limit holds for the whole range, every size planned included: an explicit one, and
 * the default's ((samples + 1) x TG_DEFAULT_TIME_LIMIT_MS): the fastest of two calls within the
 * limit plus a tenth and 20 ms; every size valid either way. */
static void time_limit_holds_for_the_range(void **state) {
  (void)state;
  texture_chain t;
  uint32_t first[240], last[240];
  tg_test_rng g = {4242};
  for (size_t r = 0; r < 240; ++r) {
    uint64_t level = r < 160 ? 1 + r * 4 / 160 : 4 - (r - 160) * 3 / 80;
    t.stride[r] = (uint64_t)4 << (level > 3 ? 3 : level);
    t.channels[r] = (uint64_t)8 << (level + tg_test_rng_range(&g, 0, 1));
    first[r] = (uint32_t)r;
    last[r] = (uint32_t)(r + 1 + (r < 160 && tg_test_rng_range(&g, 0, 9) == 0 ? tg_test_rng_range(&g, 10, 60) : 0));
  }
  const tg_size_range range = {2, {{32, 960, 32}, {32, 960, 32}}};
  tg_range_records *rr = make_range(&range, 2, 240, first, last, NULL, texture_chain_size, &t);
  /* Limits well above the set-up (reading 900 sizes once: about 20 ms, 80 ms under ASan). */
  static const uint32_t limits[] = {250, 0};
  for (size_t k = 0; k < 2; ++k) {
    const uint64_t limit_ms = limits[k] ? limits[k] : 26 * TG_DEFAULT_TIME_LIMIT_MS;
    uint64_t fastest = UINT64_MAX;
    for (int rep = 0; rep < 3; ++rep) {
      tg_plan_options o = {0};
      o.mode = TG_MODE_OBJECTS;
      o.strategy = TG_STRATEGY_BEST;
      o.time_limit_ms = limits[k];
      tg_range_plan *plan = NULL;
      uint64_t t0 = now_us();
      assert_int_equal(tg_range_plan_compute(rr, &o, NULL, NULL, &plan, NULL), TG_OK);
      uint64_t took = now_us() - t0;
      if (took < fastest) fastest = took;
      if (rep == 0) check_every_size(plan, rr, 0, NULL);
      tg_range_plan_destroy(plan);
    }
    if (fastest > tg_test_limit_allowance_us(limit_ms))
      fail_msg("limit %u ms (0: the default, %llu ms): the range took %.1f ms", limits[k],
               (unsigned long long)limit_ms, (double)fastest / 1000.0);
  }
  tg_range_records_destroy(rr);
}

TG_TEST_MAIN(cmocka_unit_test(offsets_known_answer),
             cmocka_unit_test(objects_texture_extents_and_pieces),
             cmocka_unit_test(in_place_pairs_hold_at_every_size),
             cmocka_unit_test(max_allocation_holds_or_is_refused),
             cmocka_unit_test(empty_and_single_size),
             cmocka_unit_test(refuses_bad_input),
             cmocka_unit_test(random_offsets_one_dim),
             cmocka_unit_test(random_offsets_two_dims),
             cmocka_unit_test(random_objects),
             cmocka_unit_test(survives_allocation_failures),
             cmocka_unit_test(time_limit_holds_for_the_range))
