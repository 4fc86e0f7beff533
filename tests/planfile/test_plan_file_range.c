/* Plan files over a range of input sizes (section RNGE): round trips of random range plans
 * (one and two dimensions, offsets and objects, buffers and textures, in-place chains,
 * pieces) in which the plan read back gives the saved plan at every size and passes the
 * validator there, and is written back byte for byte; matching another range or other records
 * refused naming the difference; every prefix and random changes of real range files refused
 * or valid; specific damage named; the writer's refusals; host allocation failures. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planfile/plan_file_internal.h"
#include "tangram/plan_file.h"
#include "tangram/range.h"
#include "tangram/range_plan.h"

static int quick(void) {
  const char *q = getenv("TANGRAM_TEST_QUICK");
  return q != NULL && *q != '\0' && strcmp(q, "0") != 0;
}

/* A random case: records whose sizes are constant, affine in the size, rounded up (a table)
 * or piecewise, over a range of one or two dimensions; optional in-place chains. */
typedef struct range_case {
  tg_size_range range;
  uint32_t dims;
  tg_mode mode;
  uint64_t alignment;
  size_t n;
  uint32_t first[64], last[64];
  uint64_t align[64];
  uint32_t kind[64][3];
  uint64_t a[64][3], b[64][3];
  tg_in_place_pair pairs[16];
  size_t pair_count;
  char name_text[64][24];
  const char *names[64];
  tg_range_records *records;
  tg_range_plan *plan;
  tg_plan *first_plan;
  tg_usage_record recs[64];
} range_case;

static uint64_t size_of(const range_case *c, size_t r, uint32_t axis, const int64_t *d) {
  uint64_t w = (uint64_t)d[0], h = c->range.count > 1 ? (uint64_t)d[1] : 1;
  uint64_t a = c->a[r][axis], b = c->b[r][axis];
  switch (c->kind[r][axis]) {
    case 0: return a;
    case 1: return a + b * w + (axis == 1 ? b * h : 0);
    case 2: return b * ((w + 15) / 16) + (c->range.count > 1 ? h : 0);
    default: return w < 24 ? a + b * w : a + 2 * b * w;
  }
}

static void make_case(tg_test_rng *rng, range_case *c, uint32_t range_dims, uint32_t dims, tg_mode mode) {
  memset(c, 0, sizeof *c);
  c->dims = dims;
  c->mode = mode;
  c->range.count = range_dims;
  for (uint32_t k = 0; k < range_dims; ++k) {
    int64_t lo = (int64_t)tg_test_rng_range(rng, 1, 20), step = (int64_t)tg_test_rng_range(rng, 1, 8);
    int64_t points = (int64_t)(range_dims == 1 ? tg_test_rng_range(rng, 2, 30) : tg_test_rng_range(rng, 1, 6));
    c->range.dim[k] = (tg_dim_range){lo, lo + step * (points - 1) + (int64_t)tg_test_rng_range(rng, 0, 1), step};
  }
  c->n = (size_t)tg_test_rng_range(rng, 1, 40);
  static const uint64_t k_align[] = {0, 1, 16, 256};
  c->alignment = mode == TG_MODE_OFFSETS ? k_align[tg_test_rng_range(rng, 0, 3)] : 0;
  uint32_t tasks = (uint32_t)tg_test_rng_range(rng, 2, 30);
  for (size_t r = 0; r < c->n; ++r) {
    c->first[r] = (uint32_t)tg_test_rng_range(rng, 0, tasks - 1);
    c->last[r] = c->first[r] + (uint32_t)tg_test_rng_range(rng, 0, 4);
    c->align[r] = mode == TG_MODE_OFFSETS && tg_test_rng_range(rng, 0, 3) == 0 ? 64 : 0;
    for (uint32_t x = 0; x < 3; ++x) {
      c->kind[r][x] = x < dims ? (uint32_t)tg_test_rng_range(rng, 0, 3) : 0;
      c->a[r][x] = x < dims ? tg_test_rng_range(rng, 1, 300) : 1;
      c->b[r][x] = tg_test_rng_range(rng, 1, 40);
    }
    /* Now and then the output of an in-place pair: the same sizes, born where the input dies. */
    if (r > 0 && c->pair_count < 16 && tg_test_rng_range(rng, 0, 4) == 0) {
      size_t in = r - 1;
      int used = 0;
      for (size_t i = 0; i < c->pair_count; ++i) used |= c->pairs[i].input == in || c->pairs[i].output == in;
      if (!used) {
        c->first[r] = c->last[in];
        c->last[r] = c->first[r] + (uint32_t)tg_test_rng_range(rng, 0, 4);
        memcpy(c->kind[r], c->kind[in], sizeof c->kind[r]);
        memcpy(c->a[r], c->a[in], sizeof c->a[r]);
        memcpy(c->b[r], c->b[in], sizeof c->b[r]);
        c->align[r] = c->align[in];
        c->pairs[c->pair_count++] = (tg_in_place_pair){c->last[in], in, r, (int)tg_test_rng_range(rng, 0, 1)};
      }
    }
    snprintf(c->name_text[r], sizeof c->name_text[r], "t%zu", r);
    c->names[r] = c->name_text[r];
  }
  uint64_t points = tg_size_range_point_count(&c->range);
  tg_extent *sizes = calloc(points * c->n, sizeof *sizes);
  assert_non_null(sizes);
  for (uint64_t p = 0; p < points; ++p) {
    int64_t d[2] = {0, 0};
    assert_int_equal(tg_size_range_point(&c->range, p, d), TG_OK);
    for (size_t r = 0; r < c->n; ++r) {
      tg_extent *e = &sizes[p * c->n + r];
      *e = (tg_extent){size_of(c, r, 0, d), dims > 1 ? size_of(c, r, 1, d) : 1, dims > 2 ? size_of(c, r, 2, d) : 1};
    }
  }
  tg_range_records_desc rd = {c->range, dims, c->n, c->first, c->last, sizes, c->align};
  assert_int_equal(tg_range_records_create(&rd, NULL, &c->records), TG_OK);
  free(sizes);
}

static void plan_case(tg_test_rng *rng, range_case *c) {
  tg_plan_options o = {0};
  o.mode = c->mode;
  o.strategy = c->mode == TG_MODE_OFFSETS ? TG_STRATEGY_GREEDY_BY_SIZE : TG_STRATEGY_GREEDY_BY_BREADTH;
  o.alignment = c->alignment;
  o.in_place = c->pairs;
  o.in_place_count = c->pair_count;
  /* A target of 1 cuts the range wherever one structure is not every size's best. */
  tg_range_plan_options ro = {tg_test_rng_range(rng, 0, 1) ? 1.0 : 0.0, 0};
  tg_error_info err = {{0}};
  tg_status st = tg_range_plan_compute(c->records, &o, &ro, NULL, &c->plan, &err);
  if (st != TG_OK) fail_msg("range plan: %s", err.message);
  assert_int_equal(tg_range_plan_create_instance(c->plan, NULL, &c->first_plan), TG_OK);
  int64_t d[2] = {c->range.dim[0].lo, c->range.dim[1].lo};
  assert_int_equal(tg_range_plan_instantiate(c->plan, d, c->recs, c->first_plan), TG_OK);
}

static void free_case(range_case *c) {
  tg_plan_destroy(c->first_plan);
  tg_range_plan_destroy(c->plan);
  tg_range_records_destroy(c->records);
}

static tg_storage storage_of(uint32_t dims) {
  return dims == 1 ? TG_STORAGE_BUFFER : dims == 2 ? TG_STORAGE_TEXTURE_2D : TG_STORAGE_TEXTURE_3D;
}

static tg_plan_file_desc desc_of(const range_case *c, tg_plan_file_range *fr, const tg_input_shape *shapes,
                                 size_t shape_count) {
  memset(fr, 0, sizeof *fr);
  fr->plan = c->plan;
  fr->records = c->records;
  fr->input_shapes = shapes;
  fr->input_shape_count = shape_count;
  tg_plan_file_desc d;
  memset(&d, 0, sizeof d);
  d.plan = c->first_plan;
  d.records = c->recs;
  d.names = c->names;
  d.record_count = c->n;
  d.dims = c->dims;
  d.storage = storage_of(c->dims);
  d.precision = TG_PRECISION_FP32;
  d.policy = TG_POLICY_SERIAL;
  d.strategy = TG_STRATEGY_BEST;
  d.alignment = c->alignment;
  d.source = "ranged.onnx";
  d.range = fr;
  return d;
}

/* Both plans give the same records and plan at every size, each valid there. */
static void assert_same_everywhere(const tg_range_plan *a, const tg_range_plan *b, const tg_size_range *range, size_t n,
                                   uint32_t dims, uint64_t alignment) {
  tg_usage_record *ra = calloc(2 * (n ? n : 1), sizeof *ra), *rb = ra + (n ? n : 1);
  tg_plan *pa = NULL, *pb = NULL;
  assert_int_equal(tg_range_plan_create_instance(a, NULL, &pa), TG_OK);
  assert_int_equal(tg_range_plan_create_instance(b, NULL, &pb), TG_OK);
  uint64_t points = tg_size_range_point_count(range);
  for (uint64_t p = 0; p < points; ++p) {
    int64_t d[2] = {0, 0};
    tg_size_range_point(range, p, d);
    assert_int_equal(tg_range_plan_instantiate(a, d, ra, pa), TG_OK);
    assert_int_equal(tg_range_plan_instantiate(b, d, rb, pb), TG_OK);
    assert_memory_equal(ra, rb, n * sizeof *ra);
    assert_int_equal(pa->total, pb->total);
    if (pa->mode == TG_MODE_OFFSETS) {
      assert_memory_equal(pa->offset_of, pb->offset_of, n * sizeof *pa->offset_of);
    } else {
      assert_int_equal(pa->object_count, pb->object_count);
      assert_memory_equal(pa->object_of, pb->object_of, n * sizeof *pa->object_of);
      assert_memory_equal(pa->object_sizes, pb->object_sizes, pa->object_count * sizeof *pa->object_sizes);
    }
    tg_test_assert_valid(rb, n, dims, pb, alignment, NULL);
    tg_range_point_report ea, eb;
    tg_range_plan_get_point(a, p, &ea);
    tg_range_plan_get_point(b, p, &eb);
    assert_int_equal(ea.total, eb.total);
    assert_int_equal(ea.piece, eb.piece);
  }
  tg_plan_destroy(pa);
  tg_plan_destroy(pb);
  free(ra);
}

/* Write `f` back (its plan over its own records) and compare with `data`. */
static void assert_rewrites(const tg_plan_file *f, const uint8_t *data, size_t size) {
  tg_range_plan *rp = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_plan_file_match_range(f, NULL, NULL, NULL, NULL, &rp, &err), TG_OK);
  tg_plan_file_range fr = {rp, f->range_records, f->input_shapes, f->input_shape_count};
  tg_plan_file_desc d;
  tg__plan_file_describe(f, &d);
  d.range = &fr;
  void *again = NULL;
  size_t again_size = 0;
  tg_status st = tg_plan_file_write(&d, NULL, &again, &again_size, &err);
  if (st != TG_OK) fail_msg("writing back: %s", err.message);
  assert_int_equal(again_size, size);
  assert_memory_equal(again, data, size);
  tg_plan_file_free_data(NULL, again);
  tg_range_plan_destroy(rp);
}

static void round_trip_one(range_case *c, const tg_input_shape *shapes, size_t shape_count, size_t *pieces) {
  tg_plan_file_range fr;
  tg_plan_file_desc d = desc_of(c, &fr, shapes, shape_count);
  void *data = NULL;
  size_t size = 0;
  tg_error_info err = {{0}};
  tg_status st = tg_plan_file_write(&d, NULL, &data, &size, &err);
  if (st != TG_OK) fail_msg("write: %s", err.message);
  tg_plan_file *f = NULL;
  st = tg_plan_file_parse(data, size, "ranged.tgplan", NULL, &f, &err);
  if (st != TG_OK) fail_msg("parse: %s", err.message);
  assert_int_equal(f->version, TG_PLAN_FILE_VERSION);
  assert_non_null(f->range_records);
  assert_int_equal(f->input_shape_count, shape_count);
  for (size_t k = 0; k < shape_count; ++k) {
    assert_string_equal(f->input_shapes[k].name, shapes[k].name);
    assert_int_equal(f->input_shapes[k].rank, shapes[k].rank);
    assert_memory_equal(f->input_shapes[k].range, shapes[k].range, shapes[k].rank * sizeof shapes[k].range[0]);
  }
  tg_range_plan *rp = NULL;
  /* Against the records it was made for, and against its own. */
  st = tg_plan_file_match_range(f, c->records, c->names, NULL, NULL, &rp, &err);
  if (st != TG_OK) fail_msg("match: %s", err.message);
  assert_same_everywhere(c->plan, rp, &c->range, c->n, c->dims, c->alignment);
  tg_range_plan_summary s;
  tg_range_plan_get_summary(rp, &s);
  *pieces += s.piece_count;
  tg_range_plan_destroy(rp);
  assert_rewrites(f, data, size);
  tg_plan_file_destroy(f);
  tg_plan_file_free_data(NULL, data);
}

static void round_trips(void **state) {
  (void)state;
  tg_test_rng rng = {42};
  size_t cases = quick() ? 40 : 160, pieces = 0, pairs = 0;
  static const struct {
    uint32_t range_dims, dims;
    tg_mode mode;
  } k_kinds[] = {{1, 1, TG_MODE_OFFSETS}, {1, 1, TG_MODE_OBJECTS}, {2, 1, TG_MODE_OFFSETS},
                 {2, 2, TG_MODE_OBJECTS}, {1, 2, TG_MODE_OBJECTS}, {2, 3, TG_MODE_OBJECTS}};
  for (size_t i = 0; i < cases; ++i) {
    range_case c;
    const size_t k = i % (sizeof k_kinds / sizeof k_kinds[0]);
    make_case(&rng, &c, k_kinds[k].range_dims, k_kinds[k].dims, k_kinds[k].mode);
    plan_case(&rng, &c);
    pairs += c.first_plan->in_place_count;
    /* The model's input, one of its dimensions following each of the range's. */
    tg_input_shape shape;
    memset(&shape, 0, sizeof shape);
    shape.name = "x";
    shape.rank = 4;
    shape.dims[0] = 1;
    shape.dims[1] = 3;
    for (uint32_t a = 0; a < 2; ++a) {
      if (a < c.range.count) {
        shape.range[2 + a] = c.range.dim[a];
        shape.dims[2 + a] = c.range.dim[a].lo;
      } else {
        shape.dims[2 + a] = 48;
      }
    }
    round_trip_one(&c, &shape, i % 3 ? 1 : 0, &pieces);
    free_case(&c);
  }
  print_message("%zu range plans saved and read back (%zu pieces, %zu in-place pairs): the same at every size\n",
                cases, pieces, pairs);
  assert_true(pieces > cases);
  assert_true(pairs > 0);
}

/* A real range file of a fresh case (1D offsets with an in-place chain when `offsets`, else 2D
 * texture objects), without input shapes. */
static void range_file(uint64_t seed, int offsets, range_case *c, uint8_t **data, size_t *size) {
  tg_test_rng rng = {seed};
  for (;;) {
    make_case(&rng, c, offsets ? 1 : 2, offsets ? 1 : 2, offsets ? TG_MODE_OFFSETS : TG_MODE_OBJECTS);
    plan_case(&rng, c);
    tg_range_plan_summary s;
    tg_range_plan_get_summary(c->plan, &s);
    if (c->n >= 4 && (!offsets || c->pair_count > 0) && (offsets || s.max_object_count >= 2)) break;
    free_case(c);
  }
  tg_plan_file_range fr;
  tg_plan_file_desc d = desc_of(c, &fr, NULL, 0);
  tg_error_info err = {{0}};
  if (tg_plan_file_write(&d, NULL, (void **)data, size, &err) != TG_OK) fail_msg("write: %s", err.message);
}

/* Where section RNGE's payload starts (it is the last section). */
static size_t range_payload(const uint8_t *d, size_t size) {
  for (size_t at = size - 4 - TG__PF_SECTION_HEAD; at > TG__PLAN_FILE_HEADER_BYTES; --at)
    if (memcmp(d + at, "RNGE", 4) == 0 && tg__pf_get_u64(d + at + 4) == size - 4 - at - TG__PF_SECTION_HEAD)
      return at + TG__PF_SECTION_HEAD;
  fail_msg("no section RNGE");
  return 0;
}

/* Offsets within the payload (no input shapes): the first size entry, the structures, the
 * pieces. */
static void payload_parts(const uint8_t *q, const range_case *c, size_t *sizes_at, size_t *structures_at,
                          size_t *pieces_at) {
  uint64_t points = tg_size_range_point_count(&c->range);
  size_t at = 8 + 24 * (size_t)c->range.count;
  *sizes_at = at;
  for (size_t e = 0; e < c->n * c->dims; ++e) at += 8 + (tg__pf_get_u32(q + at) == 0 ? 32 : 8 * (size_t)points);
  *structures_at = at;
  uint64_t count = tg__pf_get_u64(q + at);
  at += 8;
  for (uint64_t k = 0; k < count; ++k)
    at += 8 + 4 * (c->mode == TG_MODE_OFFSETS ? (size_t)tg__pf_get_u64(q + at) : c->n);
  *pieces_at = at;
}

static void expect_refused(uint8_t *d, size_t size, const char *want) {
  tg__plan_file_reseal(d, size);
  tg_plan_file *f = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_plan_file_parse(d, size, "r.tgplan", NULL, &f, &err);
  if (st == TG_OK) {
    tg_plan_file_destroy(f);
    fail_msg("accepted; expected '%s'", want);
  }
  assert_null(f);
  if (st != TG_ERROR_PARSE || strstr(err.message, want) == NULL || strncmp(err.message, "r.tgplan: ", 10) != 0)
    fail_msg("%s: '%s'; expected '%s'", tg_status_name(st), err.message, want);
}

/* Specific damage to the section, each refused with its own message. */
static void damaged_section_named(void **state) {
  (void)state;
  for (int offsets = 0; offsets < 2; ++offsets) {
    range_case c;
    uint8_t *good = NULL;
    size_t size = 0;
    range_file(offsets ? 5 : 6, offsets, &c, &good, &size);
    const size_t pay = range_payload(good, size);
    size_t sizes_at, structures_at, pieces_at;
    payload_parts(good + pay, &c, &sizes_at, &structures_at, &pieces_at);
    uint8_t *d = malloc(size);
    assert_non_null(d);
#define DAMAGE(at, bytes, value, want)                                        \
  do {                                                                        \
    memcpy(d, good, size);                                                    \
    if ((bytes) == 4) tg__pf_put_u32(d + pay + (at), (uint32_t)(value));      \
    else tg__pf_put_u64(d + pay + (at), (uint64_t)(value));                   \
    expect_refused(d, size, want);                                            \
  } while (0)
    DAMAGE(0, 4, 3, "the range has 1 or 2 dimensions");
    DAMAGE(4, 4, 1000, "more than 256 input shapes");
    DAMAGE(4, 4, 1, "input");
    DAMAGE(8 + 16, 8, 0, "dimension 0: STEP 0");
    DAMAGE(8 + 8, 8, c.range.dim[0].lo - 1, "dimension 0");     /* LO above HI */
    DAMAGE(sizes_at, 4, 7, "kind 7 is not a formula (0) or a table (1)");
    DAMAGE(sizes_at + 4, 4, 1, "kind");
    if (tg__pf_get_u32(good + pay + sizes_at) == 0) {
      DAMAGE(sizes_at + 8, 8, tg__pf_get_u64(good + pay + sizes_at + 8) + 1, "at the first size is not the file's record");
      if (c.range.count == 1) DAMAGE(sizes_at + 8 + 16, 8, 1, "a formula with a term along a dimension of one size");
    }
    DAMAGE(structures_at, 8, 0, "the structures are not 1 to one per size");
    DAMAGE(pieces_at, 8, 0, "the pieces are not 1 to one per size");
    DAMAGE(pieces_at + 8 + 16 * c.range.count, 4, 99, "a piece names no structure");
    DAMAGE(pieces_at + 8, 8, (uint64_t)c.range.dim[0].hi + 1000, "not a sub-grid");
    if (offsets) {
      /* The first node placed twice. */
      DAMAGE(structures_at + 8 + 8 + 4, 4, tg__pf_get_u32(good + pay + structures_at + 16), "placed twice");
      /* The output of an in-place pair named in place of its chain's first record. */
      DAMAGE(structures_at + 16 + 4 * 0, 4, (uint32_t)c.pairs[0].output, "in-place chain");
    } else {
      /* Every record in object 0: records that meet in time then share it. */
      memcpy(d, good, size);
      tg__pf_put_u32(d + pay + structures_at + 8, 1);
      for (size_t r = 0; r < c.n; ++r) tg__pf_put_u32(d + pay + structures_at + 16 + 4 * r, 0);
      expect_refused(d, size, "but meet in time");
      DAMAGE(structures_at + 8, 4, 1000, "more objects than records");
      DAMAGE(structures_at + 16, 4, 1000, "in object 1000");
    }
#undef DAMAGE
    /* A second section RNGE. */
    uint8_t *twice = malloc(size + size - pay + TG__PF_SECTION_HEAD);
    assert_non_null(twice);
    size_t section = size - 4 - (pay - TG__PF_SECTION_HEAD);
    memcpy(twice, good, size - 4);
    memcpy(twice + size - 4, good + pay - TG__PF_SECTION_HEAD, section);
    expect_refused(twice, size - 4 + section + 4, "section RNGE twice");
    free(twice);
    free(d);
    tg_plan_file_free_data(NULL, good);
    free_case(&c);
  }
}

static void assert_refused_any(tg_status st, const tg_plan_file *f, const tg_error_info *err) {
  if (st != TG_ERROR_PARSE && st != TG_ERROR_INVALID_PLAN) fail_msg("status %s: %s", tg_status_name(st), err->message);
  assert_null(f);
  if (strncmp(err->message, "r.tgplan: ", 10) != 0 || strlen(err->message) < 22)
    fail_msg("message does not name the file and the problem: '%s'", err->message);
}

/* Every prefix, as it is and resealed, is refused; random changes to the section, resealed, are
 * refused with a message or accepted, and then give a valid plan at every size and are
 * written back byte for byte. */
static void prefixes_and_changes(void **state) {
  (void)state;
  size_t prefixes = 0, rounds = quick() ? 600 : 3000, accepted = 0, refused = 0;
  tg_test_rng rng = {11};
  for (int offsets = 0; offsets < 2; ++offsets) {
    range_case c;
    uint8_t *good = NULL;
    size_t size = 0;
    range_file(offsets ? 21 : 22, offsets, &c, &good, &size);
    const size_t pay = range_payload(good, size);
    for (size_t len = pay - TG__PF_SECTION_HEAD; len < size; ++len, ++prefixes) {
      uint8_t *p = malloc(len);
      assert_non_null(p);
      memcpy(p, good, len);
      tg_plan_file *f = NULL;
      tg_error_info err = {{0}};
      assert_refused_any(tg_plan_file_parse(p, len, "r.tgplan", NULL, &f, &err), f, &err);
      tg__plan_file_reseal(p, len);
      tg_status st = tg_plan_file_parse(p, len, "r.tgplan", NULL, &f, &err);
      /* Ending where the section's tag ends, the checksum takes the tag's place: what is left
       * is the same plan at one size, a file of its own. */
      if (st == TG_OK && len == pay - TG__PF_SECTION_HEAD + 4 && f->range_records == NULL) {
        tg_test_assert_valid(f->records->records, c.n, f->records->dims, f->plan, f->alignment, NULL);
        tg_plan_file_destroy(f);
        f = NULL;
      } else {
        if (st == TG_OK) fail_msg("resealed prefix of %zu bytes (RNGE at %zu, %zu in all) accepted", len, pay, size);
        assert_refused_any(st, f, &err);
      }
      free(p);
    }
    for (size_t round = 0; round < rounds / 2; ++round) {
      uint8_t *d = malloc(size);
      assert_non_null(d);
      memcpy(d, good, size);
      size_t flips = (size_t)tg_test_rng_range(&rng, 1, 3);
      for (size_t k = 0; k < flips; ++k) {
        size_t at = (size_t)tg_test_rng_range(&rng, pay, size - 5);
        d[at] ^= (uint8_t)(tg_test_rng_range(&rng, 0, 1) ? 1u << tg_test_rng_range(&rng, 0, 7)
                                                           : tg_test_rng_range(&rng, 1, 255));
      }
      tg__plan_file_reseal(d, size);
      tg_plan_file *f = NULL;
      tg_error_info err = {{0}};
      tg_status st = tg_plan_file_parse(d, size, "r.tgplan", NULL, &f, &err);
      if (st == TG_OK) {
        tg_range_plan *rp = NULL;
        assert_int_equal(tg_plan_file_match_range(f, NULL, NULL, NULL, NULL, &rp, &err), TG_OK);
        tg_plan *inst = NULL;
        assert_int_equal(tg_range_plan_create_instance(rp, NULL, &inst), TG_OK);
        const tg_size_range *range = tg_range_records_range(f->range_records);
        tg_usage_record *recs = calloc(c.n, sizeof *recs);
        for (uint64_t p = 0; p < tg_size_range_point_count(range); ++p) {
          int64_t dm[2] = {0, 0};
          tg_size_range_point(range, p, dm);
          assert_int_equal(tg_range_plan_instantiate(rp, dm, recs, inst), TG_OK);
          tg_test_assert_valid(recs, c.n, f->records->dims, inst, f->alignment, NULL);
        }
        free(recs);
        tg_plan_destroy(inst);
        tg_range_plan_destroy(rp);
        assert_rewrites(f, d, size);
        tg_plan_file_destroy(f);
        ++accepted;
      } else {
        assert_refused_any(st, f, &err);
        ++refused;
      }
      free(d);
    }
    tg_plan_file_free_data(NULL, good);
    free_case(&c);
  }
  print_message("%zu prefixes refused; %zu resealed changes to RNGE: %zu refused, %zu accepted (valid at every "
                "size, canonical)\n", prefixes, rounds, refused, accepted);
  assert_true(refused > rounds / 2);
}

/* Another range, other sizes, other names, a file of one size: refused naming the difference. */
static void match_refusals(void **state) {
  (void)state;
  range_case c;
  uint8_t *data = NULL;
  size_t size = 0;
  range_file(31, 1, &c, &data, &size);
  tg_plan_file *f = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_plan_file_parse(data, size, "r.tgplan", NULL, &f, &err), TG_OK);
  tg_range_plan *rp = NULL;
  /* Another range: the same records over a narrower one. */
  range_case o = c;
  o.range.dim[0].hi = o.range.dim[0].lo + o.range.dim[0].step;
  o.records = NULL;
  uint64_t points = tg_size_range_point_count(&o.range);
  tg_extent *sizes = calloc(points * c.n, sizeof *sizes);
  for (uint64_t p = 0; p < points; ++p) {
    int64_t dm[2] = {0, 0};
    tg_size_range_point(&o.range, p, dm);
    for (size_t r = 0; r < c.n; ++r) sizes[p * c.n + r] = (tg_extent){size_of(&c, r, 0, dm), 1, 1};
  }
  tg_range_records_desc rd = {o.range, 1, c.n, c.first, c.last, sizes, c.align};
  assert_int_equal(tg_range_records_create(&rd, NULL, &o.records), TG_OK);
  assert_int_equal(tg_plan_file_match_range(f, o.records, c.names, NULL, NULL, &rp, &err), TG_ERROR_INVALID_PLAN);
  assert_null(rp);
  char want[160];
  snprintf(want, sizeof want, "over sizes %lld..%lld", (long long)c.range.dim[0].lo, (long long)c.range.dim[0].hi);
  if (strstr(err.message, want) == NULL || strstr(err.message, "ranged.onnx") == NULL) fail_msg("'%s'", err.message);
  tg_range_records_destroy(o.records);
  /* The same range, one size changed at the last size. */
  points = tg_size_range_point_count(&c.range);
  free(sizes);
  sizes = calloc(points * c.n, sizeof *sizes);
  for (uint64_t p = 0; p < points; ++p) {
    int64_t dm[2] = {0, 0};
    tg_size_range_point(&c.range, p, dm);
    for (size_t r = 0; r < c.n; ++r) sizes[p * c.n + r] = (tg_extent){size_of(&c, r, 0, dm), 1, 1};
  }
  sizes[(points - 1) * c.n + 2].w += 8;
  rd = (tg_range_records_desc){c.range, 1, c.n, c.first, c.last, sizes, c.align};
  assert_int_equal(tg_range_records_create(&rd, NULL, &o.records), TG_OK);
  assert_int_equal(tg_plan_file_match_range(f, o.records, c.names, NULL, NULL, &rp, &err), TG_ERROR_INVALID_PLAN);
  char at[64];
  snprintf(at, sizeof at, "first difference at size %lld, record 2 't2'", (long long)(c.range.dim[0].lo +
           (int64_t)(points - 1) * c.range.dim[0].step));
  if (strstr(err.message, at) == NULL) fail_msg("'%s' lacks '%s'", err.message, at);
  tg_range_records_destroy(o.records);
  free(sizes);
  /* Other names. */
  const char *names[64];
  memcpy(names, c.names, sizeof names);
  names[1] = "other";
  assert_int_equal(tg_plan_file_match_range(f, c.records, names, NULL, NULL, &rp, &err), TG_ERROR_INVALID_PLAN);
  if (strstr(err.message, "record 1 is 't1', here 'other'") == NULL) fail_msg("'%s'", err.message);
  /* A relation under which no two records share: the saved plan breaks it. */
  tg_share_relation never = {tg_test_share_never, NULL, NULL, 0, NULL};
  assert_int_equal(tg_plan_file_match_range(f, c.records, c.names, &never, NULL, &rp, &err), TG_ERROR_INVALID_PLAN);
  if (strstr(err.message, "reuse rule") == NULL) fail_msg("'%s'", err.message);
  assert_int_equal(tg_plan_file_match_range(f, c.records, c.names, NULL, NULL, &rp, &err), TG_OK);
  tg_range_plan_destroy(rp);
  tg_plan_file_destroy(f);
  tg_plan_file_free_data(NULL, data);
  /* A file of one size. */
  tg_plan_file_desc d;
  memset(&d, 0, sizeof d);
  d.plan = c.first_plan;
  d.records = c.recs;
  d.record_count = c.n;
  d.dims = 1;
  d.alignment = c.alignment;
  assert_int_equal(tg_plan_file_write(&d, NULL, (void **)&data, &size, &err), TG_OK);
  assert_int_equal(tg_plan_file_parse(data, size, "one.tgplan", NULL, &f, &err), TG_OK);
  assert_null(f->range_records);
  assert_int_equal(tg_plan_file_match_range(f, NULL, NULL, NULL, NULL, &rp, &err), TG_ERROR_INVALID_ARGUMENT);
  if (strstr(err.message, "one size") == NULL) fail_msg("'%s'", err.message);
  tg_plan_file_destroy(f);
  tg_plan_file_free_data(NULL, data);
  free_case(&c);
}

/* The writer refuses a plan that is not the range plan's at its first size, another alignment,
 * and input shapes that do not vary over the range. */
static void writer_refusals(void **state) {
  (void)state;
  range_case c;
  uint8_t *data = NULL;
  size_t size = 0;
  range_file(41, 1, &c, &data, &size);
  tg_plan_file_free_data(NULL, data);
  tg_plan_file_range fr;
  tg_error_info err = {{0}};
  tg_plan_file_desc d = desc_of(&c, &fr, NULL, 0);
  /* The plan at the last size with the records at the first. */
  tg_plan *last = NULL;
  tg_usage_record *recs = calloc(c.n, sizeof *recs);
  assert_int_equal(tg_range_plan_create_instance(c.plan, NULL, &last), TG_OK);
  int64_t hi[2] = {c.range.dim[0].lo + (int64_t)(tg_size_range_point_count(&c.range) - 1) * c.range.dim[0].step, 0};
  assert_int_equal(tg_range_plan_instantiate(c.plan, hi, recs, last), TG_OK);
  d.plan = last;
  tg_status st = tg_plan_file_write(&d, NULL, (void **)&data, &size, &err);
  assert_int_not_equal(st, TG_OK);
  d.plan = c.first_plan;
  d.alignment = c.alignment < 4096 ? 4096 : 1;
  st = tg_plan_file_write(&d, NULL, (void **)&data, &size, &err);
  assert_int_not_equal(st, TG_OK);
  d.alignment = c.alignment;
  tg_input_shape shape;
  memset(&shape, 0, sizeof shape);
  shape.name = "x";
  shape.rank = 2;
  shape.dims[0] = 1;
  shape.range[1] = (tg_dim_range){1, 2, 1};
  fr.input_shapes = &shape;
  fr.input_shape_count = 1;
  assert_int_equal(tg_plan_file_write(&d, NULL, (void **)&data, &size, &err), TG_ERROR_INVALID_ARGUMENT);
  if (strstr(err.message, "not a dimension of the plan's range") == NULL) fail_msg("'%s'", err.message);
  shape.range[1] = (tg_dim_range){0, 0, 0};
  shape.dims[1] = 5;
  assert_int_equal(tg_plan_file_write(&d, NULL, (void **)&data, &size, &err), TG_ERROR_INVALID_ARGUMENT);
  if (strstr(err.message, "is no input's") == NULL) fail_msg("'%s'", err.message);
  free(recs);
  tg_plan_destroy(last);
  free_case(&c);
}

/* Every host allocation failing in turn while writing, reading and matching: a clean
 * TG_ERROR_OUT_OF_HOST_MEMORY, nothing leaked. */
static void allocation_failures(void **state) {
  (void)state;
  range_case c;
  uint8_t *good = NULL;
  size_t good_size = 0;
  range_file(51, 1, &c, &good, &good_size);
  tg_plan_file_range fr;
  tg_plan_file_desc d = desc_of(&c, &fr, NULL, 0);
  uint64_t n, writes, reads;
  for (n = 1;; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, n);
    void *data = NULL;
    size_t size = 0;
    tg_error_info err = {{0}};
    tg_status st = tg_plan_file_write(&d, &fa.base, &data, &size, &err);
    if (st == TG_OK) {
      assert_memory_equal(data, good, size);
      tg_plan_file_free_data(&fa.base, data);
      assert_int_equal(fa.live_blocks, 0);
      break;
    }
    assert_int_equal(st, TG_ERROR_OUT_OF_HOST_MEMORY);
    assert_int_equal(fa.live_blocks, 0);
  }
  writes = n - 1;
  for (n = 1;; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, n);
    tg_plan_file *f = NULL;
    tg_error_info err = {{0}};
    tg_status st = tg_plan_file_parse(good, good_size, "r.tgplan", &fa.base, &f, &err);
    if (st == TG_OK) {
      tg_range_plan *rp = NULL;
      st = tg_plan_file_match_range(f, c.records, c.names, NULL, &fa.base, &rp, &err);
      if (st != TG_OK) assert_null(rp);
      tg_range_plan_destroy(rp);
      tg_plan_file_destroy(f);
      f = NULL;
      assert_int_equal(fa.live_blocks, 0);
      if (st == TG_OK) break;
    }
    assert_null(f);
    if (st != TG_ERROR_OUT_OF_HOST_MEMORY) fail_msg("failure %llu: %s", (unsigned long long)n, err.message);
    assert_int_equal(fa.live_blocks, 0);
  }
  reads = n - 1;
  print_message("%llu write and %llu read+match allocation failure points, each clean\n", (unsigned long long)writes,
                (unsigned long long)reads);
  assert_true(writes > 5 && reads > 10);
  tg_plan_file_free_data(NULL, good);
  free_case(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(round_trips),
      cmocka_unit_test(damaged_section_named),
      cmocka_unit_test(prefixes_and_changes),
      cmocka_unit_test(match_refusals),
      cmocka_unit_test(writer_refusals),
      cmocka_unit_test(allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
