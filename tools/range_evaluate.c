/* `evaluate` over a range of input sizes: per storage and mode, one plan (strategy best) valid
 * at every size, its primary records and each fallback group planned over the range, reported
 * at the sizes asked: the range's worst ratio to the own best and the totals at the ends. */
#include <string.h>

#include "tangram/schedule.h"
#include "tools/input.h"
#include "tools/range_cli.h"

/* One storage x mode: its job, or why it was not planned. */
typedef struct range_row {
  tg_storage storage;
  tg_mode mode;
  int planned;
  tg_cli_range_job job;
  size_t fallback_tensors;
  char skipped[TG_ERROR_MESSAGE_MAX];
} range_row;

/* Objects of texels under the cap, at every size: 0 with the first object above it in `why`. */
static int objects_within_cap(const tg_cli_range_job *job, const tg_model_range *r, tg_precision precision,
                              uint64_t cap, char *why, size_t why_size) {
  int ok = 1;
  for (size_t k = 0; ok && k < job->part_count; ++k) {
    const tg_range_report_part *p = &job->parts[k];
    const size_t n = tg_range_records_count(p->records);
    const uint64_t unit = tg_range_records_dims(p->records) == 1 ? 1 : tg_precision_texel_bytes(precision);
    tg_usage_record *recs = tg__calloc(job->alloc, n ? n : 1, sizeof *recs);
    for (uint64_t q = 0; ok && recs != NULL && q < r->point_count; ++q) {
      int64_t dims[TG_RANGE_MAX_DIMS];
      tg_size_range_point(&r->range, q, dims);
      if (tg_range_plan_instantiate(p->plan, dims, recs, job->instances[k]) != TG_OK) break;
      for (size_t o = 0; ok && o < job->instances[k]->object_count; ++o) {
        uint64_t v = 0;
        if (tg_extent_volume(job->instances[k]->object_sizes[o], &v) != TG_OK || !tg__mul_u64(v, unit, &v)) v = UINT64_MAX;
        if (v <= cap) continue;
        char at[64];
        tg_cli_range_size_name(&r->range, dims, at, sizeof at);
        snprintf(why, why_size, "at size %s object %zu needs %llu bytes, above --max-allocation %llu", at, o,
                 (unsigned long long)v, (unsigned long long)cap);
        ok = 0;
      }
    }
    if (recs == NULL) ok = 0;
    tg__free(job->alloc, recs);
  }
  return ok;
}

/* Plan one storage and mode over the range. A failure that belongs to the row (a cap that does
 * not hold) becomes its `skipped` reason; others are returned. */
static tg_status plan_row(const tg_cli_evaluate_range_request *rq, const tg_model_range *r,
                          const tg_model_relations *rels, const uint64_t *points, size_t count, uint32_t own,
                          const tg_allocator *alloc, range_row *row, tg_error_info *err) {
  row->job.alloc = alloc;
  row->job.own_time_limit_ms = own;
  tg_plan_options o = {0};
  o.mode = row->mode;
  o.strategy = TG_STRATEGY_BEST;
  o.relation = tg_policy_relation_get(rels->primary);
  o.in_place = rq->in_place ? r->in_place : NULL;
  o.in_place_count = rq->in_place ? r->in_place_count : 0;
  o.max_allocation = row->mode == TG_MODE_OFFSETS || tg_storage_dims(row->storage) == 1 ? rq->max_allocation : 0;
  tg_status st = tg_cli_range_job_add(&row->job, r->primary, row->storage, &o, row->mode == TG_MODE_OFFSETS,
                                      rq->precision, err);
  for (uint32_t g = 0; st == TG_OK && g < TG_STORAGE_FALLBACK_COUNT; ++g) {
    tg_storage to = tg_storage_fallback_at(g);
    if (r->fallbacks[to] == NULL) continue;
    tg_plan_options f = o;
    f.relation = tg_policy_relation_get(rels->fallback[to]);
    f.in_place = NULL;
    f.in_place_count = 0;
    f.max_allocation = row->mode == TG_MODE_OFFSETS || tg_storage_dims(to) == 1 ? rq->max_allocation : 0;
    st = tg_cli_range_job_add(&row->job, r->fallbacks[to], to, &f, row->mode == TG_MODE_OFFSETS, rq->precision, err);
  }
  if (st == TG_ERROR_LIMIT && rq->max_allocation) {
    snprintf(row->skipped, sizeof row->skipped, "--max-allocation does not hold over the range: %.*s",
             (int)(sizeof row->skipped - 48), err->message);
    return TG_OK;
  }
  if (st == TG_OK && rq->max_allocation && row->mode == TG_MODE_OBJECTS &&
      !objects_within_cap(&row->job, r, rq->precision, rq->max_allocation, row->skipped, sizeof row->skipped))
    return TG_OK;
  if (st == TG_OK) st = tg_cli_range_job_report(&row->job, points, count, rq->precision, err);
  row->planned = st == TG_OK;
  return st;
}

static void text_rows(tg__strbuf *b, const tg_cli_evaluate_range_request *rq, const tg_model_range *r,
                      const range_row *rows, size_t n, size_t size_count) {
  char what[64], lo[64], hi[64], h[6][32];
  const tg_graph *g = r->model->graph;
  tg__strbuf_printf(b, "%s: %zu tensors, %zu ops; %s; policy %s; %s\n", rq->file, g->tensor_count, g->op_count,
                    tg_precision_name(rq->precision), tg_policy_name(rq->policy),
                    rq->limits ? "default device limits" : "no device limits");
  tg__strbuf_printf(b, "range: %llu sizes (", (unsigned long long)r->point_count);
  for (uint32_t d = 0; d < r->range.count; ++d)
    tg__strbuf_printf(b, "%s%lld..%lld/%lld", d ? " x " : "", (long long)r->range.dim[d].lo,
                      (long long)r->range.dim[d].hi, (long long)r->range.dim[d].step);
  tg__strbuf_printf(b, "), %zu reported. Per storage and mode, one plan (best) valid at every size, with the "
                       "library's default time limit for the whole range; own best: each size planned alone with "
                       "best (%s), or the range planner's best plan there when smaller\n\n",
                    size_count, rq->range.own_time_s ? "--own-time-limit" : "the library's default");
  int have = 0;
  for (size_t i = 0; i < n && !have; ++i) have = rows[i].planned;
  if (have) {
    const range_row *first = NULL;
    for (size_t i = 0; i < n && first == NULL; ++i)
      if (rows[i].planned) first = &rows[i];
    tg_cli_range_size_name(&r->range, first->job.sizes[0].dims, lo, sizeof lo);
    tg_cli_range_size_name(&r->range, first->job.sizes[size_count - 1].dims, hi, sizeof hi);
  }
  tg__strbuf_printf(b, "%-18s %-8s %6s %-20s %11s %11s %11s %11s %11s %11s\n", "storage", "mode", "pieces",
                    "worst ratio (at)", "plan", "own best", "plan", "own best", "upper bound", "pool");
  tg__strbuf_printf(b, "%-18s %-8s %6s %-20s %11s %11s %11s %11s %11s %11s\n", "", "", "", "", have ? lo : "",
                    have ? lo : "", have ? hi : "", have ? hi : "", "", have ? hi : "");
  for (size_t i = 0; i < n; ++i) {
    const range_row *w = &rows[i];
    if (!w->planned) {
      tg__strbuf_printf(b, "%-18s %-8s skipped: %s\n", tg_storage_name(w->storage), tg_mode_name(w->mode), w->skipped);
      continue;
    }
    const tg_cli_range_job *j = &w->job;
    size_t at;
    double worst = tg_cli_range_job_worst(j, &at);
    tg_range_plan_summary s;
    tg_range_plan_get_summary(j->plans[0], &s);
    tg_cli_range_size_name(&r->range, j->sizes[at].dims, what, sizeof what);
    char cell[96];
    snprintf(cell, sizeof cell, "%.4f (%s)", worst, what);
    const tg_range_report_size *a = &j->sizes[0], *z = &j->sizes[j->size_count - 1];
    tg__strbuf_printf(b, "%-18s %-8s %6zu %-20s %11s %11s %11s %11s %11s %11s", tg_storage_name(w->storage),
                      tg_mode_name(w->mode), s.piece_count, cell, tg_report_format_bytes(a->bytes, h[0], sizeof h[0]),
                      tg_report_format_bytes(a->own_bytes, h[1], sizeof h[1]),
                      tg_report_format_bytes(z->bytes, h[2], sizeof h[2]),
                      tg_report_format_bytes(z->own_bytes, h[3], sizeof h[3]),
                      tg_report_format_bytes(z->upper_bound_bytes, h[4], sizeof h[4]),
                      tg_report_format_bytes(z->pool_bytes, h[5], sizeof h[5]));
    if (w->fallback_tensors) tg__strbuf_printf(b, "  (%zu fallback tensors)", w->fallback_tensors);
    tg__strbuf_puts(b, "\n");
  }
  /* The least memory where it matters most: the largest size reported. */
  const range_row *least = NULL;
  for (size_t i = 0; i < n; ++i)
    if (rows[i].planned && (least == NULL || rows[i].job.sizes[size_count - 1].bytes <
                                                 least->job.sizes[size_count - 1].bytes))
      least = &rows[i];
  if (least)
    tg__strbuf_printf(b, "\nleast memory at %s: %s %s, %s (the upper-bound plan there: %s); --json has every size\n",
                      hi, tg_storage_name(least->storage), tg_mode_name(least->mode),
                      tg_report_format_bytes(least->job.sizes[size_count - 1].bytes, h[0], sizeof h[0]),
                      tg_report_format_bytes(least->job.sizes[size_count - 1].upper_bound_bytes, h[1], sizeof h[1]));
  else
    tg__strbuf_puts(b, "\nno storage could be planned over the range\n");
}

static void json_rows(tg__strbuf *b, const tg_cli_evaluate_range_request *rq, const tg_model_range *r,
                      const range_row *rows, size_t n) {
  const tg_graph *g = r->model->graph;
  tg__strbuf_puts(b, "{\"model\":");
  tg__strbuf_json_string(b, rq->file);
  tg__strbuf_printf(b, ",\"input\":\"graph\",\"tensors\":%zu,\"ops\":%zu,\"precision\":\"%s\",\"policy\":\"%s\","
                       "\"limits\":\"%s\",\"results\":[",
                    g->tensor_count, g->op_count, tg_precision_name(rq->precision), tg_policy_name(rq->policy),
                    rq->limits ? "default" : "none");
  int first = 1;
  for (size_t i = 0; i < n; ++i) {
    if (!rows[i].planned) continue;
    tg__strbuf_printf(b, "%s{\"storage\":\"%s\",\"mode\":\"%s\",\"strategy\":\"best\",\"parts\":%zu,"
                         "\"fallback_tensors\":%zu",
                      first ? "" : ",", tg_storage_name(rows[i].storage), tg_mode_name(rows[i].mode),
                      rows[i].job.part_count, rows[i].fallback_tensors);
    tg_cli_json_range(b, &rows[i].job, r, 0);
    tg__strbuf_puts(b, "}");
    first = 0;
  }
  tg__strbuf_puts(b, "],\"skipped\":[");
  first = 1;
  for (size_t i = 0; i < n; ++i) {
    if (rows[i].planned) continue;
    tg__strbuf_printf(b, "%s{\"storage\":\"%s\",\"mode\":\"%s\",\"reason\":", first ? "" : ",",
                      tg_storage_name(rows[i].storage), tg_mode_name(rows[i].mode));
    tg__strbuf_json_string(b, rows[i].skipped);
    tg__strbuf_puts(b, "}");
    first = 0;
  }
  tg__strbuf_puts(b, "]}\n");
}

/* Load the model over the range for one storage; on failure the reason in `why`. */
static tg_status load_storage(const tg_cli_evaluate_range_request *rq, tg_storage storage, const tg_allocator *alloc,
                              tg_model_range **out, tg_error_info *err) {
  tg_model_range_desc desc = {rq->model, storage, rq->precision, rq->limits, 0, 1, 1};
  return tg_model_range_load(rq->file, &desc, alloc, out, err);
}

int tg_cli_evaluate_range(const tg_cli_evaluate_range_request *rq) {
  if (rq->refused) {
    tg_cli_error("evaluate: %s does not take a range of sizes: give each dynamic dimension one size", rq->refused);
    return TG_EXIT_USAGE;
  }
  uint64_t own = 0;
  if (rq->range.own_time_s && (!tg_cli_parse_u64(rq->range.own_time_s, 0, &own) || own >= TG_TIME_LIMIT_NONE)) {
    tg_cli_error("evaluate: --own-time-limit must be milliseconds (0 to 4294967294), not '%s'", rq->range.own_time_s);
    return TG_EXIT_USAGE;
  }
  if (rq->range.own_time_s && own == 0) own = TG_TIME_LIMIT_NONE;
  tg_failing_allocator fa;
  const tg_allocator *alloc = tg_cli_allocator(&fa);
  tg_error_info err = {{0}};
  /* Buffers never fall back: a failure there is the model's, not a storage's. */
  tg_model_range *ranges[TG_STORAGE_COUNT] = {NULL};
  tg_status st = load_storage(rq, TG_STORAGE_BUFFER, alloc, &ranges[TG_STORAGE_BUFFER], &err);
  if (st != TG_OK) {
    tg_cli_error("%s", err.message[0] ? err.message : tg_status_string(st));
    return tg_cli_exit_code(st);
  }
  const tg_model_range *r0 = ranges[TG_STORAGE_BUFFER];
  tg_cli_sizes sizes;
  int code = rq->range.sizes ? tg_cli_sizes_parse("evaluate", rq->range.sizes, r0, alloc, &sizes)
                             : tg_cli_sizes_default("evaluate", &r0->range, TG_CLI_REPORT_SIZES_ALL,
                                                    TG_CLI_REPORT_SIZES_BETWEEN, alloc, &sizes);
  range_row rows[2 * TG_STORAGE_COUNT];
  size_t n = 0;
  memset(rows, 0, sizeof rows);
  tg_schedule *sched = NULL;
  if (code == TG_EXIT_OK && rq->policy != TG_POLICY_SERIAL &&
      (st = tg_schedule_create(r0->model->graph, NULL, alloc, &sched, &err)) != TG_OK) {
    tg_cli_error("evaluate: %s", err.message);
    code = tg_cli_exit_code(st);
  }
  for (int s = 0; code == TG_EXIT_OK && s < TG_STORAGE_COUNT; ++s) {
    char why[TG_ERROR_MESSAGE_MAX] = "";
    tg_model_relations rels;
    memset(&rels, 0, sizeof rels);
    if (ranges[s] == NULL && (st = load_storage(rq, (tg_storage)s, alloc, &ranges[s], &err)) != TG_OK)
      snprintf(why, sizeof why, "%s", err.message[0] ? err.message : tg_status_string(st));
    const tg_model_range *r = ranges[s];
    size_t fallback = r ? tg_model_records_fallback_count(r->records) : 0;
    if (r && rq->no_fallback && fallback > 0)
      snprintf(why, sizeof why, "%zu tensors do not fit %s (--no-fallback)", fallback, tg_storage_name((tg_storage)s));
    if (r && !why[0] && sched && (st = tg_model_relations_create(sched, rq->policy, r->records, alloc, &rels)) != TG_OK) {
      tg_cli_error("evaluate: the %s relations: %s", tg_policy_name(rq->policy), tg_status_string(st));
      code = tg_cli_exit_code(st);
    }
    for (int m = 0; code == TG_EXIT_OK && m < 2; ++m) {
      range_row *w = &rows[n++];
      w->storage = (tg_storage)s;
      w->mode = (tg_mode)m;
      w->fallback_tensors = fallback;
      if (why[0]) {
        snprintf(w->skipped, sizeof w->skipped, "%s", why);
        continue;
      }
      err.message[0] = '\0';
      st = plan_row(rq, r, &rels, sizes.point, sizes.count, (uint32_t)own, alloc, w, &err);
      if (st != TG_OK) {
        tg_cli_error("evaluate: %s %s over the range: %s", tg_storage_name(w->storage), tg_mode_name(w->mode),
                     err.message[0] ? err.message : tg_status_string(st));
        code = st == TG_ERROR_INVALID_PLAN ? TG_EXIT_FAILURE : tg_cli_exit_code(st);
      }
    }
    tg_model_relations_clear(&rels);
  }
  if (code == TG_EXIT_OK) {
    tg__strbuf out;
    tg__strbuf_init(&out, alloc);
    if (rq->json) json_rows(&out, rq, r0, rows, n);
    else text_rows(&out, rq, r0, rows, n, sizes.count);
    code = tg_cli_print_report(&out, TG_EXIT_OK);
  }
  for (size_t i = 0; code == TG_EXIT_OK && rq->svg_dir && i < n; ++i) {
    if (!rows[i].planned) continue;
    const char *base = strrchr(rq->file, '/') ? strrchr(rq->file, '/') + 1 : rq->file;
    char title[512];
    snprintf(title, sizeof title, "%s over its range: %s %s (best), %s%s", base, tg_storage_name(rows[i].storage),
             tg_mode_name(rows[i].mode), tg_precision_name(rq->precision),
             rows[i].fallback_tensors ? ", fallback groups included" : "");
    if (!tg_cli_range_svg("evaluate", rq->svg_dir, rq->file, rows[i].storage, rows[i].mode, &rows[i].job,
                          r0->range.count, title))
      code = TG_EXIT_FAILURE;
  }
  for (size_t i = 0; i < n; ++i) tg_cli_range_job_free(&rows[i].job);
  for (int s = 0; s < TG_STORAGE_COUNT; ++s) tg_model_range_destroy(ranges[s]);
  tg_schedule_destroy(sched);
  tg_cli_sizes_free(&sizes);
  return code;
}
