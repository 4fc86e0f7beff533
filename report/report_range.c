/* Plans over a range of sizes, reported size by size (tangram/report.h): the plan's bytes,
 * that size's own best, the upper-bound plan, the run-time pool's peak and the lower bound. */
#include <stdio.h>

#include "core/internal.h"
#include "pool/pool_run.h"
#include "tangram/pool.h"
#include "tangram/report.h"

/* Bytes per volume unit of records of `dims` dimensions. */
static uint64_t unit_of(uint32_t dims, tg_precision precision) {
  return dims == 1 ? 1 : tg_precision_texel_bytes(precision);
}

static void dims_text(const tg_size_range *range, const int64_t *d, char *buf, size_t size) {
  if (range->count == 1) snprintf(buf, size, "%lld", (long long)d[0]);
  else snprintf(buf, size, "%lldx%lld", (long long)d[0], (long long)d[1]);
}

/* The run-time pool at one size: every record of every part, in task order, through one virtual
 * tlsf pool whose blocks are the size of the request that needed them (tg__pool_run_records):
 * buffers for byte records, images of their extent for texel records (or for the texel records
 * a part's byte records were made of). */
static tg_status pool_peak(const tg_range_report_part *parts, size_t part_count, tg_precision precision,
                           uint64_t point, const tg_allocator *alloc, uint64_t *peak, tg_error_info *err) {
  size_t total = 0;
  for (size_t k = 0; k < part_count; ++k) total += tg_range_records_count(parts[k].records);
  size_t n = total ? total : 1;
  tg_usage_record *recs = tg__calloc(alloc, n, sizeof *recs);
  tg_tensor_resource *res = tg__calloc(alloc, n, sizeof *res);
  uint64_t *bytes = tg__calloc(alloc, n, sizeof *bytes);
  tg_status st = recs && res && bytes ? TG_OK : TG_ERROR_OUT_OF_HOST_MEMORY;
  size_t at = 0;
  for (size_t k = 0; st == TG_OK && k < part_count; ++k) {
    const tg_range_records *held = parts[k].images ? parts[k].images : parts[k].records;
    const size_t count = tg_range_records_count(held);
    const uint32_t dims = tg_range_records_dims(held);
    st = tg_range_records_at_index(held, point, &recs[at]);
    for (size_t r = 0; st == TG_OK && r < count; ++r) {
      tg_tensor_resource *t = &res[at + r];
      const tg_extent e = recs[at + r].size;
      uint64_t v = 0;
      if (tg_extent_volume(e, &v) != TG_OK || !tg__mul_u64(v, unit_of(dims, precision), &v)) st = TG_ERROR_OVERFLOW;
      *t = dims == 1 ? (tg_tensor_resource){TG_STORAGE_BUFFER, {e.w, 1, 1}, v}
                     : (tg_tensor_resource){dims == 2 ? TG_STORAGE_TEXTURE_2D : TG_STORAGE_TEXTURE_3D, e, v};
      bytes[at + r] = v;
    }
    at += count;
  }
  tg_pool *pool = NULL;
  if (st == TG_OK) {
    tg_pool_options o;
    memset(&o, 0, sizeof o);
    o.policy = TG_POOL_TLSF;
    o.capacity = UINT64_MAX / 4;
    o.alignment = 1;
    o.precision = precision;
    o.unsynchronized = 1;
    st = tg_pool_create(NULL, &o, alloc, &pool, err);
  }
  if (st == TG_OK) {
    tg__pool_run run;
    st = tg__pool_run_records(pool, recs, res, bytes, total, 0, alloc, &run, err);
    if (st == TG_OK) {
      tg_pool_stats s;
      tg_pool_get_stats(pool, &s);
      *peak = s.peak_reserved;
      tg__pool_run_free(&run);
    }
  }
  tg_pool_destroy(pool);
  tg__free(alloc, recs);
  tg__free(alloc, res);
  tg__free(alloc, bytes);
  return st;
}

/* One part at one size: its plan there (into `instance`) validated, its own best planned alone
 * and validated; bytes added to `out`. */
static tg_status part_at(const tg_range_report_part *part, size_t k, tg_precision precision, uint64_t point,
                         tg_plan *instance, const tg_allocator *alloc, tg_range_report_size *out,
                         tg_error_info *err) {
  const size_t n = tg_range_records_count(part->records);
  const uint32_t dims = tg_range_records_dims(part->records);
  const uint64_t unit = unit_of(dims, precision);
  const tg_plan_options *o = part->options;
  char at[64];
  dims_text(tg_range_records_range(part->records), out->dims, at, sizeof at);
  tg_usage_record *recs = tg__calloc(alloc, n ? n : 1, sizeof *recs);
  tg_plan *alone = NULL;
  tg_status st = recs ? TG_OK : TG_ERROR_OUT_OF_HOST_MEMORY;
  if (st == TG_OK) st = tg_range_plan_instantiate(part->plan, out->dims, recs, instance);
  if (st != TG_OK) {
    tg__free(alloc, recs);
    return tg__error(err, st, "range report: part %zu at size %s: instantiating the plan: %s", k, at,
                     tg_status_string(st));
  }
  tg_error_info verr;
  memset(&verr, 0, sizeof verr);
  st = tg_plan_validate(recs, n, dims, instance, o->alignment, o->relation, alloc, &verr);
  if (st != TG_OK) {
    tg__free(alloc, recs);
    return tg__error(err, st, "range report: part %zu: the plan at size %s: %s", k, at, verr.message);
  }
  tg_range_point_report rep;
  tg_range_plan_get_point(part->plan, point, &rep);
  /* Alone: the same options, no exact-mode report. */
  tg_plan_options own = *o;
  own.exact_stats = NULL;
  uint64_t t0 = tg__now_us();
  st = tg_plan_compute(recs, n, dims, &own, alloc, &alone);
  out->alone_us += tg__now_us() - t0;
  if (st == TG_OK) st = tg_plan_validate(recs, n, dims, alone, o->alignment, o->relation, alloc, &verr);
  if (st != TG_OK) {
    tg_plan_destroy(alone);
    tg__free(alloc, recs);
    return tg__error(err, st, "range report: part %zu: size %s planned alone: %s", k, at,
                     verr.message[0] ? verr.message : tg_status_string(st));
  }
  uint64_t own_total = alone->total < rep.own_total ? alone->total : rep.own_total;
  uint64_t v[5];
  int ok = tg__mul_u64(instance->total, unit, &v[0]) && tg__mul_u64(own_total, unit, &v[1]) &&
           tg__mul_u64(alone->total, unit, &v[2]) && tg__mul_u64(rep.upper_bound_total, unit, &v[3]) &&
           tg__mul_u64(rep.lower_bound, unit, &v[4]) && tg__add_u64(out->bytes, v[0], &out->bytes) &&
           tg__add_u64(out->own_bytes, v[1], &out->own_bytes) && tg__add_u64(out->alone_bytes, v[2], &out->alone_bytes) &&
           tg__add_u64(out->upper_bound_bytes, v[3], &out->upper_bound_bytes) &&
           tg__add_u64(out->lower_bound, v[4], &out->lower_bound);
  if (k == 0) out->piece = rep.piece;
  tg_plan_destroy(alone);
  tg__free(alloc, recs);
  return ok ? TG_OK : tg__error(err, TG_ERROR_OVERFLOW, "range report: bytes at size %s overflow", at);
}

tg_status tg_range_report_compute_size(const tg_range_report_part *parts, size_t part_count, tg_precision precision,
                                       uint64_t point, tg_plan *const *instances, const tg_allocator *alloc,
                                       tg_range_report_size *out, tg_error_info *err) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  memset(out, 0, sizeof *out);
  if (parts == NULL || part_count == 0 || (unsigned)precision >= TG_PRECISION_COUNT)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "range report: no parts, or a precision out of range");
  const tg_size_range *range = tg_range_records_range(parts[0].records);
  for (size_t k = 0; k < part_count; ++k) {
    const tg_range_report_part *p = &parts[k];
    const tg_size_range *r = tg_range_records_range(p->records);
    if (p->records == NULL || p->plan == NULL || p->options == NULL || r == NULL || range == NULL ||
        memcmp(r, range, sizeof *r) != 0 ||
        (p->images != NULL && (tg_range_records_count(p->images) != tg_range_records_count(p->records) ||
                               memcmp(tg_range_records_range(p->images), range, sizeof *range) != 0)))
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                       "range report: part %zu: missing records, plan or options, or another range", k);
  }
  if (tg_size_range_point(range, point, out->dims) != TG_OK)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "range report: size %llu is past the range's %llu sizes",
                     (unsigned long long)point, (unsigned long long)tg_size_range_point_count(range));
  out->point = point;
  alloc = tg__alloc_or_default(alloc);
  tg_status st = TG_OK;
  for (size_t k = 0; st == TG_OK && k < part_count; ++k) {
    tg_plan *inst = instances != NULL ? instances[k] : NULL, *mine = NULL;
    if (inst == NULL && (st = tg_range_plan_create_instance(parts[k].plan, alloc, &mine)) != TG_OK)
      return tg__error(err, st, "range report: part %zu: %s", k, tg_status_string(st));
    st = part_at(&parts[k], k, precision, point, inst ? inst : mine, alloc, out, err);
    tg_plan_destroy(mine);
  }
  if (st == TG_OK) st = pool_peak(parts, part_count, precision, point, alloc, &out->pool_bytes, err);
  return st;
}
