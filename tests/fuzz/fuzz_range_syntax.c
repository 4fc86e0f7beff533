/* libFuzzer target: the range syntax of --input-shape (tg_input_shape_parse, tg_dim_range_parse),
 * the grid of a range (point <-> index), and loading a small .onnx model over what parses
 * (tg_model_range_parse), with an allocation failing now and then.
 *
 * Properties: a shape that parses prints back to text that parses to the same shape; a failure
 * says why (and leaves a shape untouched); a range's points and indices map to each other and
 * nothing off the grid has an index; a model loaded over a range has, at every point, the
 * records of a plain load there; nothing leaks. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tangram/allocator.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/range.h"

#include "tests/model/range_models.h"

#define FUZZ_FAIL() (fprintf(stderr, "%s:%d: property violated\n", __FILE__, __LINE__), abort())

/* Most grid points the target loads the model at. */
#define FUZZ_RANGE_MAX_POINTS 48

/* The shape as --input-shape writes it. */
static void shape_text(const tg_input_shape *s, char *buf, size_t size) {
  size_t n = (size_t)snprintf(buf, size, "%s:", s->name);
  if (s->rank == 0) snprintf(buf + n, size - n, "scalar");
  for (uint32_t d = 0; d < s->rank && n < size; ++d) {
    const tg_dim_range *r = &s->range[d];
    if (r->step != 0)
      n += (size_t)snprintf(buf + n, size - n, "%s%lld..%lld/%lld", d ? "x" : "", (long long)r->lo, (long long)r->hi,
                            (long long)r->step);
    else
      n += (size_t)snprintf(buf + n, size - n, "%s%lld", d ? "x" : "", (long long)s->dims[d]);
  }
}

static void check_grid(const tg_size_range *range) {
  char why[256];
  /* The number of points, worked out here: a range whose count does not fit 64 bits is
   * refused, any other accepted. */
  uint64_t expect = 1;
  int fits = 1;
  for (uint32_t d = 0; d < range->count && fits; ++d) {
    uint64_t k = (uint64_t)(range->dim[d].hi - range->dim[d].lo) / (uint64_t)range->dim[d].step + 1u;
    if (expect > UINT64_MAX / k) fits = 0;
    else expect *= k;
  }
  tg_status checked = tg_size_range_check(range, why, sizeof why);
  if (!fits) {
    if (checked == TG_OK || strstr(why, "64 bits") == NULL || tg_size_range_point_count(range) != 0) FUZZ_FAIL();
    return;
  }
  if (checked != TG_OK) FUZZ_FAIL();
  uint64_t n = tg_size_range_point_count(range);
  if (n != expect) FUZZ_FAIL();
  uint64_t probes[4] = {0, n - 1, n / 2, n / 3};
  for (int k = 0; k < 4; ++k) {
    int64_t dims[TG_RANGE_MAX_DIMS];
    uint64_t back;
    if (tg_size_range_point(range, probes[k], dims) != TG_OK) FUZZ_FAIL();
    if (tg_size_range_index(range, dims, &back) != TG_OK || back != probes[k]) FUZZ_FAIL();
    for (uint32_t d = 0; d < range->count; ++d) {
      const tg_dim_range *r = &range->dim[d];
      if (dims[d] < r->lo || dims[d] > r->hi || (dims[d] - r->lo) % r->step != 0) FUZZ_FAIL();
      int64_t saved = dims[d];
      /* Off the grid: between two points, or past either end. */
      if (r->step > 1 && saved < INT64_MAX) {
        dims[d] = saved + 1;
        if (tg_size_range_index(range, dims, &back) == TG_OK) FUZZ_FAIL();
      }
      if (saved == r->lo && r->lo > 0) {
        dims[d] = saved - 1;
        if (tg_size_range_index(range, dims, &back) == TG_OK) FUZZ_FAIL();
      }
      dims[d] = saved;
    }
  }
  int64_t dims[TG_RANGE_MAX_DIMS];
  if (tg_size_range_point(range, n, dims) == TG_OK) FUZZ_FAIL();
}

/* Every point of `r` equals a plain load there. */
static void check_against_plain_loads(const pb *m, const tg_model_range *r, const tg_model_options *o,
                                      tg_storage storage, const tg_allocator *a) {
  size_t n = tg_range_records_count(r->primary);
  tg_usage_record at[8];
  if (n > 8) FUZZ_FAIL();
  for (uint64_t p = 0; p < r->point_count; ++p) {
    int64_t dims[TG_RANGE_MAX_DIMS];
    tg_input_shape shapes[1];
    if (tg_size_range_point(&r->range, p, dims) != TG_OK) FUZZ_FAIL();
    if (tg_model_range_shapes_at(r, o, dims, shapes) != TG_OK) FUZZ_FAIL();
    if (tg_range_records_at(r->primary, dims, at) != TG_OK) FUZZ_FAIL();
    tg_model_options one = {shapes, 1};
    tg_model *m1 = NULL;
    tg_lifetimes *l = NULL;
    tg_model_records *mr = NULL;
    tg_error_info err = {{0}};
    tg_lifetime_options lo = {0};
    if (tg_model_parse_with(m->data, m->len, "fuzz.onnx", &one, a, &m1, &err) != TG_OK) FUZZ_FAIL();
    if (tg_graph_compute_lifetimes(m1->graph, &lo, a, &l, &err) != TG_OK) FUZZ_FAIL();
    if (tg_model_records_create_chain(m1->graph, l, storage, TG_PRECISION_FP32, NULL, a, &mr, &err) != TG_OK)
      FUZZ_FAIL();
    if (mr->records->count != n) FUZZ_FAIL();
    for (size_t i = 0; i < n; ++i)
      if (memcmp(&mr->records->records[i].size, &at[i].size, sizeof at[i].size) != 0 ||
          mr->records->records[i].first_task != at[i].first_task || mr->records->records[i].last_task != at[i].last_task)
        FUZZ_FAIL();
    tg_model_records_destroy(mr);
    tg_lifetimes_destroy(l);
    tg_model_destroy(m1);
  }
}

/* Load the model over the shape when its grid is small. */
static void load_over(const tg_input_shape *s, const uint8_t *data, size_t size) {
  uint64_t points = 1;
  for (uint32_t d = 0; d < s->rank; ++d)
    if (s->range[d].step != 0) {
      uint64_t along = (uint64_t)(s->range[d].hi - s->range[d].lo) / (uint64_t)s->range[d].step + 1;
      if (along > FUZZ_RANGE_MAX_POINTS || (points *= along) > FUZZ_RANGE_MAX_POINTS) return;
    }
  pb m = {0};
  tg_test_conv1d_onnx(&m, -1);
  /* Now and then an allocation fails (which one: from the input's bytes). */
  uint64_t h = 1469598103934665603ull;
  for (size_t k = 0; k < size; ++k) h = (h ^ data[k]) * 1099511628211ull;
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, h % 3 == 0 ? 1 + (h >> 8) % 400 : 0);
  tg_storage storage = (tg_storage)((h >> 4) % TG_STORAGE_COUNT);
  tg_model_options o = {s, 1};
  tg_model_range_desc desc = {&o, storage, TG_PRECISION_FP32, NULL, 0, 1, 1};
  tg_model_range *r = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_model_range_parse(m.data, m.len, "fuzz.onnx", &desc, &fa.base, &r, &err);
  if (st != TG_OK) {
    if (r != NULL || err.message[0] == '\0') FUZZ_FAIL();
  } else {
    if (r->point_count != tg_size_range_point_count(&r->range) || r->point_count > FUZZ_RANGE_MAX_POINTS) FUZZ_FAIL();
    check_grid(&r->range);
    if (fa.fail_at == 0) check_against_plain_loads(&m, r, &o, storage, NULL);
    tg_model_range_destroy(r);
  }
  if (fa.live_blocks != 0) FUZZ_FAIL();
  pb_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 512) return 0;
  char text[513];
  memcpy(text, data, size);
  text[size] = '\0';

  /* One range. */
  tg_dim_range one;
  char err[256] = "";
  if (tg_dim_range_parse(text, &one, err, sizeof err) == TG_OK) {
    if (one.lo < 0 || one.lo > one.hi || one.step < 1) FUZZ_FAIL();
    tg_size_range r1 = {1, {one, {0, 0, 0}}}, r2 = {2, {one, one}};
    check_grid(&r1);
    check_grid(&r2);
  } else if (err[0] == '\0') {
    FUZZ_FAIL();
  }

  /* A whole shape. */
  char name[64], again_name[64], printed[1024], err2[256] = "";
  tg_input_shape s, again;
  memset(&s, 0x5a, sizeof s);
  tg_input_shape before = s;
  if (tg_input_shape_parse(text, name, sizeof name, &s, err2, sizeof err2) != TG_OK) {
    if (err2[0] == '\0' || memcmp(&s, &before, sizeof s) != 0) FUZZ_FAIL();
    return 0;
  }
  if (s.name != name || s.rank > TG_MAX_RANK) FUZZ_FAIL();
  for (uint32_t d = 0; d < s.rank; ++d) {
    const tg_dim_range *r = &s.range[d];
    if (s.dims[d] < 0) FUZZ_FAIL();
    if (r->step != 0 && (r->lo < 0 || r->lo > r->hi || r->step < 1 || s.dims[d] != r->lo)) FUZZ_FAIL();
  }
  shape_text(&s, printed, sizeof printed);
  if (tg_input_shape_parse(printed, again_name, sizeof again_name, &again, err2, sizeof err2) != TG_OK) FUZZ_FAIL();
  if (strcmp(again_name, name) != 0 || again.rank != s.rank) FUZZ_FAIL();
  for (uint32_t d = 0; d < s.rank; ++d)
    if (again.dims[d] != s.dims[d] || memcmp(&again.range[d], &s.range[d], sizeof s.range[d]) != 0) FUZZ_FAIL();
  load_over(&s, data, size);
  return 0;
}
