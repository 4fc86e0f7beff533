/* Plan files over a range of input sizes: section RNGE (docs/plan-files.md), its writer and
 * reader, and matching a file's range plan to an engine's records. The section holds the
 * range, optionally the model's input shapes with their ranges, every record's size at every
 * size (a formula where one is exact at every size, else a table), and the structures and
 * pieces of the plan (tangram/range_plan.h); tg_range_plan_create makes the plan again from
 * them. */
#include <stdio.h>
#include <string.h>

#include "planfile/plan_file_internal.h"

#define put_u32 tg__pf_put_u32
#define put_u64 tg__pf_put_u64
#define get_u32 tg__pf_get_u32
#define get_u64 tg__pf_get_u64

/* At most this many input shapes in a section. */
#define MAX_INPUT_SHAPES 256u
/* At most this many record sizes over a range (sizes x records): the reader holds them all. */
#define MAX_RANGE_CELLS ((uint64_t)1 << 22)
/* A size stored as a formula: base, then per grid index of dimension 0, of dimension 1, and
 * of their product (arithmetic modulo 2^64); or as a table of every size's value. */
#define KIND_FORMULA 0u
#define KIND_TABLE 1u

struct tg_plan_file_structures {
  tg_range_structure *structures;
  size_t structure_count;
  tg_size_range *pieces;
  uint32_t *piece_structure;
  size_t piece_count;
};

/* Points along each dimension of `range` (n1 = 1 with one dimension). */
static void grid_sides(const tg_size_range *range, uint64_t *n0, uint64_t *n1) {
  uint64_t points = tg_size_range_point_count(range);
  *n1 = range->count > 1 ? (uint64_t)(range->dim[1].hi - range->dim[1].lo) / (uint64_t)range->dim[1].step + 1 : 1;
  *n0 = *n1 ? points / *n1 : 0;
}

/* The formula of `v` (one value per point, row-major over n0 x n1) from its corner values; 1
 * when it gives back every value (the size is then stored as the formula), else 0. Both the
 * writer and the reader decide with this, so every size has one encoding. */
static int fit_formula(const uint64_t *v, uint64_t n0, uint64_t n1, uint64_t c[4]) {
  c[0] = v[0];
  c[1] = n0 > 1 ? v[n1] - c[0] : 0;
  c[2] = n1 > 1 ? v[1] - c[0] : 0;
  c[3] = n0 > 1 && n1 > 1 ? v[n1 + 1] - c[0] - c[1] - c[2] : 0;
  for (uint64_t i = 0; i < n0; ++i)
    for (uint64_t j = 0; j < n1; ++j)
      if (c[0] + c[1] * i + c[2] * j + c[3] * i * j != v[i * n1 + j]) return 0;
  return 1;
}

static void range_text(const tg_size_range *r, char *buf, size_t size) {
  char d[2][64];
  for (uint32_t a = 0; a < 2; ++a) {
    const tg_dim_range *x = &r->dim[a];
    if (x->step == 1) snprintf(d[a], sizeof d[a], "%lld..%lld", (long long)x->lo, (long long)x->hi);
    else snprintf(d[a], sizeof d[a], "%lld..%lld/%lld", (long long)x->lo, (long long)x->hi, (long long)x->step);
  }
  if (r->count >= 2) snprintf(buf, size, "%sx%s", d[0], d[1]);
  else snprintf(buf, size, "%s", d[0]);
}

static void size_text(const tg_size_range *r, uint64_t p, char *buf, size_t size) {
  int64_t d[TG_RANGE_MAX_DIMS] = {0, 0};
  tg_size_range_point(r, p, d);
  if (r->count >= 2) snprintf(buf, size, "%lldx%lld", (long long)d[0], (long long)d[1]);
  else snprintf(buf, size, "%lld", (long long)d[0]);
}

static int records_equal(const tg_usage_record *a, const tg_usage_record *b) {
  return a->size.w == b->size.w && a->size.h == b->size.h && a->size.d == b->size.d &&
         a->first_task == b->first_task && a->last_task == b->last_task && a->alignment == b->alignment;
}

/* Whether two plans of one mode place every record alike (offsets or objects, total). */
static int plans_equal(const tg_plan *a, const tg_plan *b) {
  if (a->mode != b->mode || a->record_count != b->record_count || a->total != b->total) return 0;
  size_t n = a->record_count;
  if (a->mode == TG_MODE_OFFSETS) return n == 0 || memcmp(a->offset_of, b->offset_of, n * sizeof *a->offset_of) == 0;
  if (a->object_count != b->object_count ||
      (n && memcmp(a->object_of, b->object_of, n * sizeof *a->object_of) != 0))
    return 0;
  for (size_t k = 0; k < a->object_count; ++k)
    if (a->object_sizes[k].w != b->object_sizes[k].w || a->object_sizes[k].h != b->object_sizes[k].h ||
        a->object_sizes[k].d != b->object_sizes[k].d)
      return 0;
  return 1;
}

/* The instance of `rp` at its first size: a new plan `*inst`, and the records there in `recs`. */
static tg_status first_instance(const tg_range_plan *rp, const tg_allocator *alloc, tg_usage_record *recs,
                                tg_plan **inst) {
  tg_range_point_report at;
  tg_status st = tg_range_plan_get_point(rp, 0, &at);
  if (st == TG_OK) st = tg_range_plan_create_instance(rp, alloc, inst);
  if (st == TG_OK && (st = tg_range_plan_instantiate(rp, at.dims, recs, *inst)) != TG_OK) {
    tg_plan_destroy(*inst);
    *inst = NULL;
  }
  return st;
}

/* The options a range plan is made again with from a file's plan: its mode, strategy,
 * alignment, allocation cap and in-place pairs. */
static tg_plan_options saved_options(const tg_plan *plan, uint64_t alignment, const tg_share_relation *relation) {
  tg_plan_options o;
  memset(&o, 0, sizeof o);
  o.mode = plan->mode;
  o.strategy = plan->strategy;
  o.alignment = alignment;
  o.relation = relation;
  o.max_allocation = plan->max_allocation;
  o.in_place = plan->in_place;
  o.in_place_count = plan->in_place_count;
  return o;
}

/* ---- writer ---- */

void tg__pf_range_out_free(tg__pf_range_out *o, const tg_allocator *alloc) {
  tg__free(alloc, o->formula);
  tg__free(alloc, o->coef);
  tg__free(alloc, o->values);
  memset(o, 0, sizeof *o);
}

/* Every input shape: named, of a known rank, each varying dimension one of the range's, and
 * every dimension of the range one of them. */
static tg_status check_input_shapes(const tg_plan_file_range *r, const tg_size_range *range, tg_error_info *err) {
  if (r->input_shape_count > MAX_INPUT_SHAPES || (r->input_shape_count && r->input_shapes == NULL))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: %zu input shapes (at most %u)", r->input_shape_count,
                     MAX_INPUT_SHAPES);
  int covered[TG_RANGE_MAX_DIMS] = {0, 0};
  for (size_t k = 0; k < r->input_shape_count; ++k) {
    const tg_input_shape *s = &r->input_shapes[k];
    size_t len = s->name ? strlen(s->name) : 0;
    if (len == 0 || len > TG_PLAN_FILE_MAX_NAME || s->rank > TG_MAX_RANK)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: input shape %zu: no name, a name over %u bytes, or "
                       "rank %u over %d", k, TG_PLAN_FILE_MAX_NAME, s->rank, TG_MAX_RANK);
    for (uint32_t d = 0; d < s->rank; ++d) {
      const tg_dim_range *x = &s->range[d];
      if (x->step == 0) {
        if (s->dims[d] < 0) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: input %s: dimension %u is negative", s->name, d);
        continue;
      }
      int found = 0;
      for (uint32_t a = 0; a < range->count; ++a)
        if (x->lo == range->dim[a].lo && x->hi == range->dim[a].hi && x->step == range->dim[a].step) found = 1, covered[a] = 1;
      if (!found)
        return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: input %s: dimension %u varies over "
                         "%lld..%lld/%lld, not a dimension of the plan's range", s->name, d, (long long)x->lo,
                         (long long)x->hi, (long long)x->step);
    }
  }
  for (uint32_t a = 0; r->input_shape_count > 0 && a < range->count; ++a)
    if (!covered[a])
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: dimension %u of the range is no input's", a);
  return TG_OK;
}

/* The range plan made again from its own structures over its records, with the serial rule
 * and `alignment`: what a reader gets. */
static tg_status recreate(const tg_range_plan *rp, const tg_range_records *records, const tg_plan *plan,
                          uint64_t alignment, const tg_allocator *alloc, tg_range_plan **out, tg_error_info *err) {
  size_t s_count = tg_range_plan_get_structure_count(rp), k_count;
  tg_range_plan_summary sm;
  tg_range_plan_get_summary(rp, &sm);
  k_count = sm.piece_count;
  tg_range_structure *ss = tg__calloc(alloc, s_count ? s_count : 1, sizeof *ss);
  tg_size_range *pieces = tg__calloc(alloc, k_count ? k_count : 1, sizeof *pieces);
  uint32_t *which = tg__calloc(alloc, k_count ? k_count : 1, sizeof *which);
  tg_status st = ss && pieces && which ? TG_OK : TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t k = 0; st == TG_OK && k < s_count; ++k) st = tg_range_plan_get_structure(rp, k, &ss[k]);
  for (size_t k = 0; st == TG_OK && k < k_count; ++k) {
    tg_range_piece pc;
    if ((st = tg_range_plan_get_piece(rp, k, &pc)) == TG_OK) {
      pieces[k] = pc.range;
      which[k] = pc.structure;
    }
  }
  if (st == TG_OK) {
    tg_plan_options o = saved_options(plan, alignment, NULL);
    tg_range_plan_desc d = {&o, ss, s_count, pieces, which, k_count};
    st = tg_range_plan_create(records, &d, alloc, out, err);
  }
  tg__free(alloc, ss);
  tg__free(alloc, pieces);
  tg__free(alloc, which);
  return st;
}

/* The range plan's records and plan at the first size are the description's, and a reader
 * gets the same plan back. */
static tg_status check_first_size(const tg_plan_file_desc *desc, const tg_allocator *alloc, tg_error_info *err) {
  const tg_plan_file_range *r = desc->range;
  const size_t n = desc->record_count;
  tg_usage_record *recs = tg__calloc(alloc, n ? n : 1, sizeof *recs);
  if (recs == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_range_plan *again = NULL;
  tg_plan *inst = NULL;
  tg_error_info why = {{0}};
  tg_status st = recreate(r->plan, r->records, desc->plan, desc->alignment, alloc, &again, &why);
  if (st != TG_OK) {
    st = tg__error(err, st == TG_ERROR_OUT_OF_HOST_MEMORY ? st : TG_ERROR_INVALID_ARGUMENT,
                   "plan file: the range plan cannot be made again from its structures with alignment %llu: %s",
                   (unsigned long long)desc->alignment, why.message);
    goto done;
  }
  /* Under another policy the structures hold more conflicts than the serial rule: the plan
   * as computed is compared; a reader compares it under the relation. */
  if ((st = first_instance(desc->policy == TG_POLICY_SERIAL ? again : r->plan, alloc, recs, &inst)) != TG_OK) goto done;
  for (size_t k = 0; k < n; ++k)
    if (!records_equal(&recs[k], &desc->records[k])) {
      st = tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: record %zu is not the range's record %zu at its first size",
                     k, k);
      goto done;
    }
  if (!plans_equal(inst, desc->plan))
    st = tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                   "plan file: the plan is not the range plan's instance at its first size%s",
                   desc->policy == TG_POLICY_SERIAL ? " (made with another alignment?)" : "");
done:
  tg_plan_destroy(inst);
  tg_range_plan_destroy(again);
  tg__free(alloc, recs);
  return st;
}

tg_status tg__pf_range_prepare(const tg_plan_file_desc *desc, const tg_allocator *alloc, tg__pf_range_out *out,
                               tg_error_info *err) {
  memset(out, 0, sizeof *out);
  const tg_plan_file_range *r = desc->range;
  out->range = r;
  if (r->plan == NULL || r->records == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: a range without its plan or records");
  tg_range_plan_summary sm;
  tg_range_plan_get_summary(r->plan, &sm);
  const tg_size_range *range = tg_range_records_range(r->records);
  const size_t n = desc->record_count;
  const uint32_t dims = desc->dims;
  if (sm.mode != desc->plan->mode || sm.dims != dims || sm.record_count != n || tg_range_records_count(r->records) != n ||
      tg_range_records_dims(r->records) != dims || sm.point_count != tg_size_range_point_count(range))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                     "plan file: the range plan (%s, %uD, %zu records) is not of the plan's mode, dims and records",
                     tg_mode_name(sm.mode), sm.dims, sm.record_count);
  if (sm.point_count > MAX_RANGE_CELLS / (n ? n : 1))
    return tg__error(err, TG_ERROR_LIMIT, "plan file: %llu sizes x %zu records exceed the %llu record sizes a plan "
                     "file holds", (unsigned long long)sm.point_count, n, (unsigned long long)MAX_RANGE_CELLS);
  tg_status st = check_input_shapes(r, range, err);
  if (st != TG_OK) return st;
  if ((st = check_first_size(desc, alloc, err)) != TG_OK) return st;
  uint64_t points = sm.point_count, n0, n1;
  grid_sides(range, &n0, &n1);
  out->count = n;
  out->dims = dims;
  out->points = points;
  size_t cells, entries = n * dims; /* n <= TG_MAX_RECORDS: no overflow */
  if (!tg__mul_size((size_t)points, entries ? entries : 1, &cells))
    return tg__error(err, TG_ERROR_OVERFLOW, "plan file: the range's sizes do not fit in memory");
  out->formula = tg__calloc(alloc, entries ? entries : 1, 1);
  out->coef = tg__calloc(alloc, entries ? entries * 4 : 1, sizeof *out->coef);
  out->values = tg__calloc(alloc, cells, sizeof *out->values);
  uint64_t *column = tg__calloc(alloc, (size_t)points, sizeof *column);
  tg_usage_record *recs = tg__calloc(alloc, n ? n : 1, sizeof *recs);
  if (!out->formula || !out->coef || !out->values || !column || !recs) {
    tg__free(alloc, column);
    tg__free(alloc, recs);
    tg__pf_range_out_free(out, alloc);
    return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "plan file: out of memory");
  }
  for (uint64_t p = 0; p < points; ++p) {
    tg_range_records_at_index(r->records, p, recs);
    for (size_t k = 0; k < n; ++k) {
      const uint64_t v[3] = {recs[k].size.w, recs[k].size.h, recs[k].size.d};
      for (uint32_t a = 0; a < dims; ++a) out->values[(p * n + k) * dims + a] = v[a];
    }
  }
  /* Sizes: the fixed part (kinds), each entry's payload, then the rest of the section. */
  size_t bytes = 8 + 24 * (size_t)range->count, table = 0, step;
  int ok = tg__mul_size((size_t)points, 8, &table);
  for (size_t k = 0; k < r->input_shape_count; ++k)
    bytes += 8 + strlen(r->input_shapes[k].name) + 32 * (size_t)r->input_shapes[k].rank;
  for (size_t e = 0; ok && e < entries; ++e) {
    for (uint64_t p = 0; p < points; ++p) column[p] = out->values[p * entries + e];
    out->formula[e] = (uint8_t)fit_formula(column, n0, n1, &out->coef[4 * e]);
    step = 8 + (out->formula[e] ? 32 : table);
    ok = (bytes += step) >= step;
  }
  size_t s_count = tg_range_plan_get_structure_count(r->plan);
  ok = ok && (bytes += 8) >= 8;
  for (size_t k = 0; ok && k < s_count; ++k) {
    tg_range_structure s;
    tg_range_plan_get_structure(r->plan, k, &s);
    step = 8 + 4 * (sm.mode == TG_MODE_OFFSETS ? s.order_count : n);
    ok = (bytes += step) >= step;
  }
  step = 8 + sm.piece_count * (16 * (size_t)range->count + 8);
  ok = ok && (bytes += step) >= step && (bytes += TG__PF_SECTION_HEAD) >= TG__PF_SECTION_HEAD;
  tg__free(alloc, column);
  tg__free(alloc, recs);
  if (!ok) {
    tg__pf_range_out_free(out, alloc);
    return tg__error(err, TG_ERROR_OVERFLOW, "plan file: the range section would not fit in memory");
  }
  out->bytes = bytes;
  return TG_OK;
}

void tg__pf_range_write(const tg__pf_range_out *o, uint8_t *b) {
  const tg_plan_file_range *r = o->range;
  const tg_size_range *range = tg_range_records_range(r->records);
  const size_t n = o->count, entries = n * o->dims;
  put_u32(b, TG__PF_TAG_RANGE);
  put_u64(b + 4, o->bytes - TG__PF_SECTION_HEAD);
  uint8_t *q = b + TG__PF_SECTION_HEAD;
  put_u32(q, range->count);
  put_u32(q + 4, (uint32_t)r->input_shape_count);
  q += 8;
  for (uint32_t a = 0; a < range->count; ++a, q += 24) {
    put_u64(q, (uint64_t)range->dim[a].lo);
    put_u64(q + 8, (uint64_t)range->dim[a].hi);
    put_u64(q + 16, (uint64_t)range->dim[a].step);
  }
  for (size_t k = 0; k < r->input_shape_count; ++k) {
    const tg_input_shape *s = &r->input_shapes[k];
    size_t len = strlen(s->name);
    put_u32(q, (uint32_t)len);
    put_u32(q + 4, s->rank);
    memcpy(q + 8, s->name, len);
    q += 8 + len;
    for (uint32_t d = 0; d < s->rank; ++d, q += 32) {
      const tg_dim_range *x = &s->range[d];
      /* A varying dimension's value is its range's low end (tg_input_shape_parse's). */
      put_u64(q, (uint64_t)(x->step ? x->lo : s->dims[d]));
      put_u64(q + 8, x->step ? (uint64_t)x->lo : 0);
      put_u64(q + 16, x->step ? (uint64_t)x->hi : 0);
      put_u64(q + 24, (uint64_t)x->step);
    }
  }
  for (size_t e = 0; e < entries; ++e) {
    put_u32(q, o->formula[e] ? KIND_FORMULA : KIND_TABLE);
    put_u32(q + 4, 0);
    q += 8;
    if (o->formula[e]) {
      for (int c = 0; c < 4; ++c, q += 8) put_u64(q, o->coef[4 * e + (size_t)c]);
    } else {
      for (uint64_t p = 0; p < o->points; ++p, q += 8) put_u64(q, o->values[p * entries + e]);
    }
  }
  tg_range_plan_summary sm;
  tg_range_plan_get_summary(r->plan, &sm);
  size_t s_count = tg_range_plan_get_structure_count(r->plan);
  put_u64(q, s_count);
  q += 8;
  for (size_t k = 0; k < s_count; ++k) {
    tg_range_structure s;
    tg_range_plan_get_structure(r->plan, k, &s);
    if (sm.mode == TG_MODE_OFFSETS) {
      put_u64(q, s.order_count);
      q += 8;
      for (size_t i = 0; i < s.order_count; ++i, q += 4) put_u32(q, s.order[i]);
    } else {
      put_u32(q, s.object_count);
      put_u32(q + 4, 0);
      q += 8;
      for (size_t i = 0; i < n; ++i, q += 4) put_u32(q, s.object_of[i]);
    }
  }
  put_u64(q, sm.piece_count);
  q += 8;
  for (size_t k = 0; k < sm.piece_count; ++k) {
    tg_range_piece pc;
    tg_range_plan_get_piece(r->plan, k, &pc);
    for (uint32_t a = 0; a < range->count; ++a, q += 16) {
      put_u64(q, (uint64_t)pc.range.dim[a].lo);
      put_u64(q + 8, (uint64_t)pc.range.dim[a].hi);
    }
    put_u32(q, pc.structure);
    put_u32(q + 4, 0);
    q += 8;
  }
}

/* ---- reader ---- */

static void structures_free(struct tg_plan_file_structures *s, const tg_allocator *alloc) {
  if (s == NULL) return;
  for (size_t k = 0; k < s->structure_count; ++k) {
    tg__free(alloc, (void *)s->structures[k].order);
    tg__free(alloc, (void *)s->structures[k].object_of);
  }
  tg__free(alloc, s->structures);
  tg__free(alloc, s->pieces);
  tg__free(alloc, s->piece_structure);
  tg__free(alloc, s);
}

void tg__pf_range_free(tg_plan_file *f) {
  const tg_allocator *a = &f->alloc;
  tg_range_records_destroy(f->range_records);
  for (size_t k = 0; f->input_shapes && k < f->input_shape_count; ++k) tg__free(a, (void *)f->input_shapes[k].name);
  tg__free(a, f->input_shapes);
  structures_free(f->structures, a);
  f->range_records = NULL;
  f->input_shapes = NULL;
  f->input_shape_count = 0;
  f->structures = NULL;
}

/* A cursor over the payload: every read checks the bytes left first. */
typedef struct cursor {
  const uint8_t *p;
  uint64_t left;
  const char *name;
  tg_error_info *err;
} cursor;

static int take(cursor *c, uint64_t bytes, const char *what, const uint8_t **at) {
  if (bytes > c->left) {
    tg__error(c->err, TG_ERROR_PARSE, "%s: section RNGE: %s needs %llu bytes, %llu remain", c->name, what,
              (unsigned long long)bytes, (unsigned long long)c->left);
    return 0;
  }
  *at = c->p;
  c->p += bytes;
  c->left -= bytes;
  return 1;
}

static tg_status bad(cursor *c, const char *fmt, const char *detail) {
  return tg__error(c->err, TG_ERROR_PARSE, "%s: section RNGE: %s%s", c->name, fmt, detail ? detail : "");
}

static tg_status read_range(cursor *c, tg_size_range *range, uint32_t *shapes) {
  const uint8_t *h;
  if (!take(c, 8, "its head", &h)) return TG_ERROR_PARSE;
  uint32_t count = get_u32(h);
  *shapes = get_u32(h + 4);
  if (count < 1 || count > TG_RANGE_MAX_DIMS) return bad(c, "the range has 1 or 2 dimensions", NULL);
  if (*shapes > MAX_INPUT_SHAPES) return bad(c, "more than 256 input shapes", NULL);
  memset(range, 0, sizeof *range);
  range->count = count;
  for (uint32_t a = 0; a < count; ++a) {
    if (!take(c, 24, "a dimension of the range", &h)) return TG_ERROR_PARSE;
    uint64_t lo = get_u64(h), hi = get_u64(h + 8), step = get_u64(h + 16);
    if (lo > INT64_MAX || hi > INT64_MAX || step > INT64_MAX) return bad(c, "a bound of the range exceeds 2^63 - 1", NULL);
    range->dim[a] = (tg_dim_range){(int64_t)lo, (int64_t)hi, (int64_t)step};
  }
  char why[TG_ERROR_MESSAGE_MAX];
  if (tg_size_range_check(range, why, sizeof why) != TG_OK) return bad(c, "", why);
  if (tg_size_range_point_count(range) > TG_RANGE_PLAN_MAX_POINTS) return bad(c, "more than 65536 sizes", NULL);
  return TG_OK;
}

static tg_status read_input_shapes(cursor *c, tg_plan_file *f, uint32_t count, const tg_size_range *range) {
  const tg_allocator *a = &f->alloc;
  f->input_shapes = tg__calloc(a, count ? count : 1, sizeof *f->input_shapes);
  if (f->input_shapes == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  int covered[TG_RANGE_MAX_DIMS] = {0, 0};
  for (uint32_t k = 0; k < count; ++k) {
    const uint8_t *h, *name, *dims;
    if (!take(c, 8, "an input shape", &h)) return TG_ERROR_PARSE;
    uint32_t len = get_u32(h), rank = get_u32(h + 4);
    if (len == 0 || len > TG_PLAN_FILE_MAX_NAME || rank > TG_MAX_RANK)
      return bad(c, "an input shape has no name, a name over 65536 bytes, or a rank over 8", NULL);
    if (!take(c, len, "an input's name", &name) || !take(c, 32ull * rank, "an input's dimensions", &dims))
      return TG_ERROR_PARSE;
    if (memchr(name, 0, len) != NULL) return bad(c, "an input's name contains a NUL byte", NULL);
    tg_input_shape *s = &f->input_shapes[k];
    s->name = tg__strndup(a, (const char *)name, len);
    f->input_shape_count = k + 1;
    if (s->name == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    s->rank = rank;
    for (uint32_t d = 0; d < rank; ++d) {
      const uint8_t *e = dims + 32 * d;
      uint64_t v = get_u64(e), lo = get_u64(e + 8), hi = get_u64(e + 16), step = get_u64(e + 24);
      if (v > INT64_MAX) return bad(c, "an input's dimension exceeds 2^63 - 1", NULL);
      s->dims[d] = (int64_t)v;
      if (step == 0) {
        if (lo != 0 || hi != 0) return bad(c, "a fixed dimension of an input has a range", NULL);
        continue;
      }
      int found = 0;
      for (uint32_t x = 0; x < range->count; ++x)
        if ((uint64_t)range->dim[x].lo == lo && (uint64_t)range->dim[x].hi == hi && (uint64_t)range->dim[x].step == step)
          found = covered[x] = 1;
      if (!found || v != lo) return bad(c, "an input's varying dimension is not one of the range's (or not its low end)", NULL);
      s->range[d] = (tg_dim_range){(int64_t)lo, (int64_t)hi, (int64_t)step};
    }
  }
  for (uint32_t x = 0; count > 0 && x < range->count; ++x)
    if (!covered[x]) return bad(c, "a dimension of the range is no input's", NULL);
  return TG_OK;
}

/* Every record's size at every size into `sizes` (points x count, point-major). */
static tg_status read_sizes(cursor *c, const tg_plan_file *f, const tg_size_range *range, tg_extent *sizes,
                            uint64_t *column) {
  const size_t n = f->records->count;
  const uint32_t dims = f->records->dims;
  const uint64_t points = tg_size_range_point_count(range);
  uint64_t n0, n1, coef[4];
  grid_sides(range, &n0, &n1);
  for (uint64_t p = 0; p < points; ++p)
    for (size_t r = 0; r < n; ++r) sizes[p * n + r] = (tg_extent){1, 1, 1};
  char what[200];
  for (size_t r = 0; r < n; ++r)
    for (uint32_t a = 0; a < dims; ++a) {
      const uint8_t *h, *v;
      snprintf(what, sizeof what, "the size of record %zu", r);
      if (!take(c, 8, what, &h)) return TG_ERROR_PARSE;
      uint32_t kind = get_u32(h);
      if (kind > KIND_TABLE || get_u32(h + 4) != 0) {
        snprintf(what, sizeof what, "record %zu, axis %u: kind %u is not a formula (0) or a table (1)", r, a, kind);
        return bad(c, what, NULL);
      }
      if (!take(c, kind == KIND_FORMULA ? 32 : 8 * points, what, &v)) return TG_ERROR_PARSE;
      if (kind == KIND_FORMULA) {
        for (int k = 0; k < 4; ++k) coef[k] = get_u64(v + 8 * k);
        /* One encoding per size: no term along a dimension of one point. */
        if ((n0 < 2 && (coef[1] || coef[3])) || (n1 < 2 && (coef[2] || coef[3]))) {
          snprintf(what, sizeof what, "record %zu, axis %u: a formula with a term along a dimension of one size", r, a);
          return bad(c, what, NULL);
        }
        for (uint64_t i = 0; i < n0; ++i)
          for (uint64_t j = 0; j < n1; ++j) column[i * n1 + j] = coef[0] + coef[1] * i + coef[2] * j + coef[3] * i * j;
      } else {
        for (uint64_t p = 0; p < points; ++p) column[p] = get_u64(v + 8 * p);
        if (fit_formula(column, n0, n1, coef)) {
          snprintf(what, sizeof what, "record %zu, axis %u: a table that a formula gives (written as one)", r, a);
          return bad(c, what, NULL);
        }
      }
      for (uint64_t p = 0; p < points; ++p) {
        tg_extent *e = &sizes[p * n + r];
        if (a == 0) e->w = column[p];
        else if (a == 1) e->h = column[p];
        else e->d = column[p];
      }
    }
  for (uint64_t p = 0; p < points; ++p)
    for (size_t r = 0; r < n; ++r) {
      uint64_t v;
      if (tg_extent_volume(sizes[p * n + r], &v) != TG_OK) {
        char at[64];
        size_text(range, p, at, sizeof at);
        snprintf(what, sizeof what, "record %zu at size %s: the extent overflows 64 bits", r, at);
        return bad(c, what, NULL);
      }
      if (p == 0) {
        const tg_extent x = f->records->records[r].size, y = sizes[r];
        if (x.w != y.w || x.h != y.h || x.d != y.d) {
          snprintf(what, sizeof what, "record %zu at the first size is not the file's record", r);
          return bad(c, what, NULL);
        }
      }
    }
  return TG_OK;
}

static tg_status read_structures(cursor *c, tg_plan_file *f, struct tg_plan_file_structures *s,
                                 const tg_size_range *range) {
  const tg_allocator *a = &f->alloc;
  const size_t n = f->records->count;
  const uint64_t points = tg_size_range_point_count(range);
  const uint8_t *h;
  if (!take(c, 8, "the structure count", &h)) return TG_ERROR_PARSE;
  uint64_t count = get_u64(h);
  if (count < 1 || count > points) return bad(c, "the structures are not 1 to one per size", NULL);
  s->structures = tg__calloc(a, (size_t)count, sizeof *s->structures);
  if (s->structures == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t k = 0; k < count; ++k) {
    tg_range_structure *x = &s->structures[k];
    const uint8_t *v;
    if (!take(c, 8, "a structure", &h)) return TG_ERROR_PARSE;
    uint64_t m = n;
    if (f->plan->mode == TG_MODE_OFFSETS) {
      m = get_u64(h);
      if (m > n) return bad(c, "a structure orders more nodes than there are records", NULL);
    } else {
      x->object_count = get_u32(h);
      if (get_u32(h + 4) != 0 || x->object_count > n) return bad(c, "a structure has more objects than records", NULL);
    }
    if (!take(c, 4 * m, "a structure's entries", &v)) return TG_ERROR_PARSE;
    uint32_t *e = tg__calloc(a, m ? (size_t)m : 1, sizeof *e);
    if (e == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    for (size_t i = 0; i < m; ++i) e[i] = get_u32(v + 4 * i);
    if (f->plan->mode == TG_MODE_OFFSETS) {
      x->order = e;
      x->order_count = (size_t)m;
    } else {
      x->object_of = e;
    }
    s->structure_count = k + 1;
  }
  if (!take(c, 8, "the piece count", &h)) return TG_ERROR_PARSE;
  uint64_t pieces = get_u64(h);
  if (pieces < 1 || pieces > points) return bad(c, "the pieces are not 1 to one per size", NULL);
  s->pieces = tg__calloc(a, (size_t)pieces, sizeof *s->pieces);
  s->piece_structure = tg__calloc(a, (size_t)pieces, sizeof *s->piece_structure);
  if (s->pieces == NULL || s->piece_structure == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t k = 0; k < pieces; ++k) {
    if (!take(c, 16ull * range->count + 8, "a piece", &h)) return TG_ERROR_PARSE;
    tg_size_range *pc = &s->pieces[k];
    *pc = *range;
    for (uint32_t x = 0; x < range->count; ++x) {
      uint64_t lo = get_u64(h + 16 * x), hi = get_u64(h + 16 * x + 8);
      if (lo > INT64_MAX || hi > INT64_MAX) return bad(c, "a piece's bound exceeds 2^63 - 1", NULL);
      pc->dim[x].lo = (int64_t)lo;
      pc->dim[x].hi = (int64_t)hi;
    }
    s->piece_structure[k] = get_u32(h + 16 * range->count);
    if (get_u32(h + 16 * range->count + 4) != 0 || s->piece_structure[k] >= count)
      return bad(c, "a piece names no structure of the section", NULL);
  }
  s->piece_count = (size_t)pieces;
  return TG_OK;
}

/* The file's structures made into a range plan over `records` under `relation`. */
static tg_status make_plan(const tg_plan_file *f, const tg_range_records *records, const tg_share_relation *relation,
                           const tg_allocator *alloc, tg_range_plan **out, tg_error_info *err) {
  const struct tg_plan_file_structures *s = f->structures;
  tg_plan_options o = saved_options(f->plan, f->alignment, relation);
  tg_range_plan_desc d = {&o, s->structures, s->structure_count, s->pieces, s->piece_structure, s->piece_count};
  return tg_range_plan_create(records, &d, alloc, out, err);
}

/* Whether `rp`'s instance at the first size is the file's plan. */
static tg_status same_first_plan(const tg_plan_file *f, const tg_range_plan *rp, const tg_allocator *alloc, int *same) {
  size_t n = f->records->count;
  tg_usage_record *recs = tg__calloc(alloc, n ? n : 1, sizeof *recs);
  if (recs == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_plan *inst = NULL;
  tg_status st = first_instance(rp, alloc, recs, &inst);
  if (st == TG_OK) *same = plans_equal(inst, f->plan);
  tg_plan_destroy(inst);
  tg__free(alloc, recs);
  return st;
}

tg_status tg__pf_range_read(const uint8_t *payload, uint64_t length, tg_plan_file *f, const char *name,
                            tg_error_info *err) {
  const tg_allocator *a = &f->alloc;
  cursor c = {payload, length, name, err};
  tg_size_range range;
  uint32_t shapes;
  tg_status st = read_range(&c, &range, &shapes);
  if (st == TG_OK) st = read_input_shapes(&c, f, shapes, &range);
  if (st != TG_OK) return st == TG_ERROR_OUT_OF_HOST_MEMORY ? tg__error(err, st, "%s: out of memory", name) : st;
  const size_t n = f->records->count;
  const uint64_t points = tg_size_range_point_count(&range);
  if (points > MAX_RANGE_CELLS / (n ? n : 1)) return bad(&c, "more than 4194304 record sizes (sizes x records)", NULL);
  size_t cells = (size_t)points * (n ? n : 1);
  tg_extent *sizes = tg__calloc(a, cells, sizeof *sizes);
  uint64_t *column = tg__calloc(a, (size_t)points, sizeof *column);
  uint32_t *first = tg__calloc(a, n ? n : 1, sizeof *first), *last = tg__calloc(a, n ? n : 1, sizeof *last);
  uint64_t *align = tg__calloc(a, n ? n : 1, sizeof *align);
  if (!sizes || !column || !first || !last || !align) st = TG_ERROR_OUT_OF_HOST_MEMORY;
  if (st == TG_OK) st = read_sizes(&c, f, &range, sizes, column);
  if (st == TG_OK) {
    for (size_t r = 0; r < n; ++r) {
      first[r] = f->records->records[r].first_task;
      last[r] = f->records->records[r].last_task;
      align[r] = f->records->records[r].alignment;
    }
    tg_range_records_desc rd = {range, f->records->dims, n, first, last, sizes, align};
    st = tg_range_records_create(&rd, a, &f->range_records);
    if (st != TG_OK && st != TG_ERROR_OUT_OF_HOST_MEMORY) st = bad(&c, "the records over the range are malformed", NULL);
  }
  tg__free(a, sizes);
  tg__free(a, column);
  tg__free(a, first);
  tg__free(a, last);
  tg__free(a, align);
  if (st == TG_OK) {
    f->structures = tg__calloc(a, 1, sizeof *f->structures);
    st = f->structures ? read_structures(&c, f, f->structures, &range) : TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (st == TG_OK && c.left != 0) {
    char left[48];
    snprintf(left, sizeof left, "%llu bytes after the pieces", (unsigned long long)c.left);
    st = bad(&c, left, NULL);
  }
  if (st == TG_ERROR_OUT_OF_HOST_MEMORY) return tg__error(err, st, "%s: out of memory", name);
  if (st != TG_OK) return st;
  /* The structures against the records (serial rule), and under the serial policy the plan
   * they give at the first size against the file's. */
  tg_range_plan *rp = NULL;
  tg_error_info why = {{0}};
  st = make_plan(f, f->range_records, NULL, a, &rp, &why);
  if (st == TG_ERROR_OUT_OF_HOST_MEMORY) return tg__error(err, st, "%s: out of memory", name);
  if (st != TG_OK) return bad(&c, "", why.message);
  int same = 1;
  if (f->policy == TG_POLICY_SERIAL) st = same_first_plan(f, rp, a, &same);
  tg_range_plan_destroy(rp);
  if (st != TG_OK) return tg__error(err, st, "%s: section RNGE: %s", name, tg_status_string(st));
  if (!same) return bad(&c, "the plan over the range does not give the file's plan at its first size", NULL);
  return TG_OK;
}

/* ---- matching ---- */

static const char *shown(const char *s) { return s ? s : "(unnamed)"; }

static tg_status compare_records(const tg_plan_file *f, const tg_range_records *records, const char *const *names,
                                 const tg_allocator *alloc, tg_error_info *err) {
  const tg_size_range *mine = tg_range_records_range(f->range_records), *theirs = tg_range_records_range(records);
  const char *model = f->source[0] ? f->source : "(unnamed model)";
  char r1[160], r2[160];
  range_text(mine, r1, sizeof r1);
  range_text(theirs, r2, sizeof r2);
  int same_range = mine->count == theirs->count;
  for (uint32_t a = 0; same_range && a < mine->count; ++a)
    same_range = mine->dim[a].lo == theirs->dim[a].lo && mine->dim[a].hi == theirs->dim[a].hi &&
                 mine->dim[a].step == theirs->dim[a].step;
  if (!same_range)
    return tg__error(err, TG_ERROR_INVALID_PLAN, "the plan was made for '%.160s' over sizes %s, not for records over "
                     "sizes %s", model, r1, r2);
  const size_t n = f->records->count;
  if (tg_range_records_count(records) != n || tg_range_records_dims(records) != f->records->dims)
    return tg__error(err, TG_ERROR_INVALID_PLAN, "the plan was made for '%.160s' (%zu %uD records over sizes %s), not "
                     "for these %zu %uD records", model, n, f->records->dims, r1, tg_range_records_count(records),
                     tg_range_records_dims(records));
  for (size_t r = 0; names && r < n; ++r) {
    const char *x = f->records->names[r], *y = names[r];
    if ((x == NULL) != (y == NULL) || (x && strcmp(x, y) != 0))
      return tg__error(err, TG_ERROR_INVALID_PLAN, "the plan was made for '%.160s': its record %zu is '%.60s', here "
                       "'%.60s'", model, r, shown(x), shown(y));
  }
  tg_usage_record *a = tg__calloc(alloc, n ? 2 * n : 1, sizeof *a);
  if (a == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  tg_usage_record *b = a + n;
  tg_status st = TG_OK;
  const uint64_t points = tg_size_range_point_count(mine);
  for (uint64_t p = 0; p < points && st == TG_OK; ++p) {
    tg_range_records_at_index(f->range_records, p, a);
    tg_range_records_at_index(records, p, b);
    for (size_t r = 0; r < n; ++r) {
      if (records_equal(&a[r], &b[r])) continue;
      char at[64];
      size_text(mine, p, at, sizeof at);
      st = tg__error(err, TG_ERROR_INVALID_PLAN,
                     "the plan was made for '%.160s' over sizes %s; first difference at size %s, record %zu '%.60s': "
                     "the plan's %llux%llux%llu [%u,%u], here %llux%llux%llu [%u,%u]", model, r1, at, r,
                     shown(f->records->names[r]), (unsigned long long)a[r].size.w, (unsigned long long)a[r].size.h,
                     (unsigned long long)a[r].size.d, a[r].first_task, a[r].last_task, (unsigned long long)b[r].size.w,
                     (unsigned long long)b[r].size.h, (unsigned long long)b[r].size.d, b[r].first_task, b[r].last_task);
      break;
    }
  }
  tg__free(alloc, a);
  return st;
}

tg_status tg_plan_file_match_range(const tg_plan_file *file, const tg_range_records *records,
                                   const char *const *names, const tg_share_relation *relation,
                                   const tg_allocator *alloc, tg_range_plan **out, tg_error_info *err) {
  if (out) *out = NULL;
  if (file == NULL || out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: NULL file or output");
  if (file->structures == NULL || file->range_records == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: '%.160s' holds a plan for one size, not a range",
                     file->source);
  alloc = tg__alloc_or_default(alloc);
  tg_status st;
  if (records != NULL && (st = compare_records(file, records, names, alloc, err)) != TG_OK) return st;
  const char *model = file->source[0] ? file->source : "(unnamed model)";
  tg_range_plan *rp = NULL;
  tg_error_info why = {{0}};
  st = make_plan(file, records ? records : file->range_records, relation, alloc, &rp, &why);
  if (st == TG_ERROR_INVALID_ARGUMENT)
    return tg__error(err, TG_ERROR_INVALID_PLAN, "the plan made for '%.160s' breaks the reuse rule given here: %s",
                     model, why.message);
  if (st != TG_OK) return tg__error(err, st, "%s", why.message);
  int same = 1;
  if ((st = same_first_plan(file, rp, alloc, &same)) != TG_OK) {
    tg_range_plan_destroy(rp);
    return tg__error(err, st, "plan file: %s", tg_status_string(st));
  }
  if (!same) {
    tg_range_plan_destroy(rp);
    return tg__error(err, TG_ERROR_INVALID_PLAN,
                     "the plan made for '%.160s' is another plan under the reuse rule given here (at the first size "
                     "it is not the saved plan): the rule asks more than the plan's policy %s", model,
                     tg_policy_name(file->policy));
  }
  *out = rp;
  return TG_OK;
}
