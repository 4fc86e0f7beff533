/* libFuzzer target: the range syntax (tg_dim_range_parse), the grid's numbering and records over
 * a range (tangram/range.h).
 *
 * Input: one or two lines, each a range text (LO..HI or LO..HI/STEP); the bytes after the
 * second newline (or after the first when the second line does not parse) are sizes.
 *
 * Properties: a refusal is TG_ERROR_INVALID_ARGUMENT with a message and leaves the output
 * untouched; an accepted range has lo <= hi, step >= 1, and prints back ("%lld..%lld/%lld") to
 * a text that parses to the same range; points and indices round-trip at the grid's ends and
 * middle, and a value off the grid has no index; records made over the range (at most 64
 * points, 3 records, sizes decoded from the bytes left: each 8 bytes little-endian, or a small
 * affine or ceil form) give back exactly the sizes given at every point. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tangram/range.h"

#define FUZZ_FAIL() (fprintf(stderr, "%s:%d: property violated\n", __FILE__, __LINE__), abort())

/* Parse one line of at most 127 bytes; 1 when it is a range. */
static int parse_line(const uint8_t *data, size_t size, size_t *used, tg_dim_range *out) {
  char text[128];
  size_t n = 0;
  while (n < size && data[n] != '\n') ++n;
  *used = n < size ? n + 1 : n;
  if (n >= sizeof text) return 0;
  memcpy(text, data, n);
  text[n] = '\0';
  tg_dim_range d = {-7, -8, -9};
  char err[256] = "";
  tg_status st = tg_dim_range_parse(text, &d, err, sizeof err);
  if (st != TG_OK) {
    if (st != TG_ERROR_INVALID_ARGUMENT || err[0] == '\0') FUZZ_FAIL();
    if (d.lo != -7 || d.hi != -8 || d.step != -9) FUZZ_FAIL();
    return 0;
  }
  if (d.lo < 0 || d.lo > d.hi || d.step < 1) FUZZ_FAIL();
  char again[96];
  snprintf(again, sizeof again, "%lld..%lld/%lld", (long long)d.lo, (long long)d.hi, (long long)d.step);
  tg_dim_range e;
  if (tg_dim_range_parse(again, &e, NULL, 0) != TG_OK || e.lo != d.lo || e.hi != d.hi || e.step != d.step)
    FUZZ_FAIL();
  *out = d;
  return 1;
}

static void check_grid(const tg_size_range *r) {
  uint64_t points = tg_size_range_point_count(r);
  if (points == 0) {
    if (tg_size_range_check(r, NULL, 0) == TG_OK) FUZZ_FAIL();
    return;
  }
  uint64_t probe[3] = {0, points / 2, points - 1};
  for (int k = 0; k < 3; ++k) {
    int64_t dims[2];
    uint64_t index = 0;
    if (tg_size_range_point(r, probe[k], dims) != TG_OK) FUZZ_FAIL();
    if (tg_size_range_index(r, dims, &index) != TG_OK || index != probe[k]) FUZZ_FAIL();
    for (uint32_t a = 0; a < r->count; ++a)
      if (dims[a] < r->dim[a].lo || dims[a] > r->dim[a].hi) FUZZ_FAIL();
    if (r->dim[0].step > 1 && dims[0] < INT64_MAX) {
      dims[0] += 1; /* between two points */
      if (tg_size_range_index(r, dims, &index) == TG_OK) FUZZ_FAIL();
    }
  }
  int64_t dims[2];
  if (tg_size_range_point(r, points, dims) == TG_OK) FUZZ_FAIL();
}

static uint64_t take_u64(const uint8_t **p, size_t *left) {
  uint64_t v = 0;
  for (int k = 0; k < 8 && *left > 0; ++k, ++*p, --*left) v |= (uint64_t)**p << (8 * k);
  return v;
}

static void check_records(tg_size_range r, const uint8_t *p, size_t left) {
  /* At most 64 points: cut each dimension to 8 points. */
  for (uint32_t a = 0; a < r.count; ++a) {
    uint64_t n = (uint64_t)(r.dim[a].hi - r.dim[a].lo) / (uint64_t)r.dim[a].step + 1u;
    if (n > 8) r.dim[a].hi = r.dim[a].lo + 7 * r.dim[a].step;
  }
  uint64_t points = tg_size_range_point_count(&r);
  if (points == 0 || points > 64) return;
  enum { N = 3 };
  tg_extent sizes[64 * N];
  uint32_t first[N] = {0, 1, 2}, last[N] = {1, 2, 3};
  uint64_t code[N];
  for (int k = 0; k < N; ++k) code[k] = take_u64(&p, &left);
  for (uint64_t q = 0; q < points; ++q) {
    int64_t d[2] = {0, 0};
    if (tg_size_range_point(&r, q, d) != TG_OK) FUZZ_FAIL();
    for (int k = 0; k < N; ++k) {
      uint64_t c = code[k], v;
      switch (c & 3u) {
        case 0: v = take_u64(&p, &left); break;
        case 1: v = (c >> 2) + (c >> 20) * (uint64_t)d[0] + (c >> 40) * (uint64_t)d[1]; break;
        case 2: v = (c >> 8) * (((uint64_t)d[0] + (c >> 2 & 63u)) / ((c >> 2 & 31u) + 1u)); break;
        default: v = UINT64_MAX - (c >> 2) * (uint64_t)d[0] * ((uint64_t)d[1] + 1u); break;
      }
      sizes[q * N + (uint64_t)k] = (tg_extent){v, 1, 1};
    }
  }
  tg_range_records_desc desc = {r, 1, N, first, last, sizes, NULL};
  tg_range_records *rr = NULL;
  if (tg_range_records_create(&desc, NULL, &rr) != TG_OK) FUZZ_FAIL();
  tg_usage_record out[N];
  for (uint64_t q = 0; q < points; ++q) {
    if (tg_range_records_at_index(rr, q, out) != TG_OK) FUZZ_FAIL();
    for (int k = 0; k < N; ++k)
      if (out[k].size.w != sizes[q * N + (uint64_t)k].w || out[k].size.h != 1 || out[k].first_task != first[k])
        FUZZ_FAIL();
  }
  tg_range_records_destroy(rr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t used = 0, used2 = 0;
  tg_size_range r;
  memset(&r, 0, sizeof r);
  if (!parse_line(data, size, &used, &r.dim[0])) return 0;
  r.count = 1;
  if (parse_line(data + used, size - used, &used2, &r.dim[1])) {
    r.count = 2;
    used += used2;
  }
  check_grid(&r);
  check_records(r, data + used, size - used);
  return 0;
}
