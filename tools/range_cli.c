/* Ranges of input sizes in `plan` (and what `evaluate` shares, tools/range_evaluate.c): the
 * sizes reported, the plans over the range in parts, their per-size report as JSON, text and a
 * chart. */
#define _POSIX_C_SOURCE 200809L
#include "tools/range_cli.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/input.h"
#include "tools/plan_file_cli.h"

int tg_cli_range_option(int argc, char **argv, int *i, tg_cli_range_options *o) {
  int m = tg_cli_option(argc, argv, i, "--sizes", &o->sizes);
  if (m == 0) m = tg_cli_option(argc, argv, i, "--own-time-limit", &o->own_time_s);
  if (m == 0 && o->svg_dir_option) m = tg_cli_option(argc, argv, i, "--svg-dir", &o->svg_dir);
  return m;
}

void tg_cli_json_range_dims(tg__strbuf *b, const tg_model_range *r) {
  const tg_graph *g = r->model->graph;
  tg__strbuf_puts(b, "\"dims\":[");
  for (uint32_t d = 0; d < r->range.count; ++d) {
    tg__strbuf_printf(b, "%s{\"lo\":%lld,\"hi\":%lld,\"step\":%lld,\"axes\":[", d ? "," : "", (long long)r->range.dim[d].lo,
                      (long long)r->range.dim[d].hi, (long long)r->range.dim[d].step);
    int first = 1;
    for (size_t k = 0; k < r->axis_count; ++k) {
      if (r->axes[k].dim != d) continue;
      tg__strbuf_puts(b, first ? "{\"input\":" : ",{\"input\":");
      tg__strbuf_json_string(b, g->tensors[g->inputs[r->axes[k].input]].name);
      tg__strbuf_printf(b, ",\"axis\":%u}", r->axes[k].axis);
      first = 0;
    }
    tg__strbuf_puts(b, "]}");
  }
  tg__strbuf_puts(b, "]");
}

tg_status tg_cli_range_records_build(const tg_size_range *range, size_t count, tg_cli_records_at_fn at, void *ctx,
                                     const tg_allocator *alloc, tg_range_records **out) {
  *out = NULL;
  const uint64_t points = tg_size_range_point_count(range);
  size_t cells;
  if (!tg__mul_size((size_t)points, count ? count : 1, &cells)) return TG_ERROR_OVERFLOW;
  tg_extent *sizes = tg__calloc(alloc, cells, sizeof *sizes);
  uint32_t *first = tg__calloc(alloc, count ? count : 1, sizeof *first);
  uint32_t *last = tg__calloc(alloc, count ? count : 1, sizeof *last);
  uint64_t *align = tg__calloc(alloc, count ? count : 1, sizeof *align);
  tg_status st = sizes && first && last && align ? TG_OK : TG_ERROR_OUT_OF_HOST_MEMORY;
  for (uint64_t p = 0; st == TG_OK && p < points; ++p) {
    const tg_usage_record *recs = NULL;
    if ((st = at(ctx, p, &recs)) != TG_OK) break;
    for (size_t r = 0; r < count; ++r) {
      sizes[p * count + r] = recs[r].size;
      first[r] = recs[r].first_task;
      last[r] = recs[r].last_task;
      if (recs[r].alignment > align[r]) align[r] = recs[r].alignment;
    }
  }
  if (st == TG_OK) {
    tg_range_records_desc d = {*range, 1, count, first, last, sizes, align};
    st = tg_range_records_create(&d, alloc, out);
  }
  tg__free(alloc, sizes);
  tg__free(alloc, first);
  tg__free(alloc, last);
  tg__free(alloc, align);
  return st;
}

/* Byte records of texel records: each size's texels x `texel_bytes`, same tasks and alignments. */
typedef struct texels_as_bytes {
  const tg_range_records *texels;
  uint64_t texel_bytes;
  tg_usage_record *recs;
} texels_as_bytes;

static tg_status bytes_at(void *ctx, uint64_t p, const tg_usage_record **out) {
  texels_as_bytes *t = ctx;
  tg_status st = tg_range_records_at_index(t->texels, p, t->recs);
  for (size_t r = 0; st == TG_OK && r < tg_range_records_count(t->texels); ++r) {
    uint64_t v;
    if (tg_extent_volume(t->recs[r].size, &v) != TG_OK || !tg__mul_u64(v, t->texel_bytes, &v)) st = TG_ERROR_OVERFLOW;
    t->recs[r].size = (tg_extent){v, 1, 1};
  }
  *out = t->recs;
  return st;
}

static tg_status bytes_of(const tg_range_records *texels, uint64_t texel_bytes, const tg_allocator *alloc,
                          tg_range_records **out) {
  const size_t n = tg_range_records_count(texels);
  texels_as_bytes t = {texels, texel_bytes, tg__calloc(alloc, n ? n : 1, sizeof *t.recs)};
  if (t.recs == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_status st = tg_cli_range_records_build(tg_range_records_range(texels), n, bytes_at, &t, alloc, out);
  tg__free(alloc, t.recs);
  return st;
}

tg_status tg_cli_range_job_add(tg_cli_range_job *job, const tg_range_records *records, tg_storage storage,
                               const tg_plan_options *options, int bytes_of_texels, tg_precision precision,
                               tg_error_info *err) {
  size_t k = job->part_count;
  if (k == TG_CLI_RANGE_MAX_PARTS) return TG_ERROR_INTERNAL;
  const tg_range_records *planned = records;
  tg_status st = TG_OK;
  if (bytes_of_texels && tg_range_records_dims(records) > 1) {
    st = bytes_of(records, tg_precision_texel_bytes(precision), job->alloc, &job->owned[k]);
    if (st != TG_OK) return tg__error(err, st, "the textures' bytes over the range: %s", tg_status_string(st));
    planned = job->owned[k];
  }
  job->options[k] = *options;
  if (st == TG_OK) st = tg_range_plan_compute(planned, &job->options[k], NULL, job->alloc, &job->plans[k], err);
  if (st == TG_OK && (st = tg_range_plan_create_instance(job->plans[k], job->alloc, &job->instances[k])) != TG_OK)
    tg__error(err, st, "%s", tg_status_string(st));
  if (st != TG_OK) {
    tg_range_plan_destroy(job->plans[k]);
    tg_range_records_destroy(job->owned[k]);
    job->plans[k] = NULL;
    job->owned[k] = NULL;
    return st;
  }
  job->parts[k] = (tg_range_report_part){planned, job->plans[k], &job->options[k], planned != records ? records : NULL};
  job->storage_of[k] = storage;
  job->part_count++;
  return TG_OK;
}

tg_status tg_cli_range_job_report(tg_cli_range_job *job, const uint64_t *points, size_t count, tg_precision precision,
                                  tg_error_info *err) {
  /* Each size alone: the parts' options with the own-best time limit. */
  for (size_t k = 0; k < job->part_count; ++k)
    if (job->options[k].strategy == TG_STRATEGY_BEST) job->options[k].time_limit_ms = job->own_time_limit_ms;
  job->sizes = tg__calloc(job->alloc, count ? count : 1, sizeof *job->sizes);
  if (job->sizes == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
  job->size_count = count;
  for (size_t i = 0; i < count; ++i) {
    tg_status st = tg_range_report_compute_size(job->parts, job->part_count, precision, points[i], job->instances,
                                                job->alloc, &job->sizes[i], err);
    if (st != TG_OK) return st;
  }
  return TG_OK;
}

double tg_cli_range_job_worst(const tg_cli_range_job *job, size_t *at) {
  double worst = 0.0;
  *at = 0;
  for (size_t i = 0; i < job->size_count; ++i) {
    const tg_range_report_size *s = &job->sizes[i];
    double r = s->own_bytes ? (double)s->bytes / (double)s->own_bytes : 1.0;
    if (r > worst) {
      worst = r;
      *at = i;
    }
  }
  return worst;
}

void tg_cli_range_job_free(tg_cli_range_job *job) {
  for (size_t k = 0; k < TG_CLI_RANGE_MAX_PARTS; ++k) {
    tg_plan_destroy(job->instances[k]);
    tg_range_plan_destroy(job->plans[k]);
    tg_range_records_destroy(job->owned[k]);
  }
  tg__free(job->alloc, job->sizes);
  const tg_allocator *a = job->alloc;
  memset(job, 0, sizeof *job);
  job->alloc = a;
}

static void json_dims(tg__strbuf *b, const tg_size_range *range, const int64_t *d) {
  tg__strbuf_printf(b, "[%lld", (long long)d[0]);
  if (range->count > 1) tg__strbuf_printf(b, ",%lld", (long long)d[1]);
  tg__strbuf_puts(b, "]");
}

/* Size i's plan of the first part, record by record, as a plain `plan --json` gives it. */
static void json_records(tg__strbuf *b, const tg_cli_range_job *job, const int64_t *dims) {
  const tg_range_report_part *p = &job->parts[0];
  tg_plan *inst = job->instances[0];
  size_t n = tg_range_records_count(p->records);
  tg_usage_record *recs = tg__calloc(job->alloc, n ? n : 1, sizeof *recs);
  if (recs == NULL || tg_range_plan_instantiate(p->plan, dims, recs, inst) != TG_OK) {
    b->failed = 1;
    tg__free(job->alloc, recs);
    return;
  }
  tg__free(job->alloc, recs);
  tg__strbuf_printf(b, ",\"total\":%llu", (unsigned long long)inst->total);
  if (inst->mode == TG_MODE_OFFSETS) {
    tg__strbuf_puts(b, ",\"offset_of\":[");
    for (size_t r = 0; r < n; ++r) tg__strbuf_printf(b, "%s%llu", r ? "," : "", (unsigned long long)inst->offset_of[r]);
    tg__strbuf_puts(b, "]");
    return;
  }
  tg__strbuf_puts(b, ",\"object_of\":[");
  for (size_t r = 0; r < n; ++r) tg__strbuf_printf(b, "%s%u", r ? "," : "", inst->object_of[r]);
  tg__strbuf_puts(b, "],\"object_sizes\":[");
  for (size_t k = 0; k < inst->object_count; ++k) {
    const tg_extent *e = &inst->object_sizes[k];
    if (k) tg__strbuf_puts(b, ",");
    if (inst->dims == 1) tg__strbuf_printf(b, "%llu", (unsigned long long)e->w);
    else if (inst->dims == 2) tg__strbuf_printf(b, "[%llu,%llu]", (unsigned long long)e->w, (unsigned long long)e->h);
    else tg__strbuf_printf(b, "[%llu,%llu,%llu]", (unsigned long long)e->w, (unsigned long long)e->h, (unsigned long long)e->d);
  }
  tg__strbuf_puts(b, "]");
}

void tg_cli_json_range(tg__strbuf *b, const tg_cli_range_job *job, const tg_model_range *r, int with_records) {
  size_t worst_at;
  double worst = tg_cli_range_job_worst(job, &worst_at);
  tg_range_plan_summary s0;
  tg_range_plan_get_summary(job->plans[0], &s0);
  uint64_t compute_us = 0, searched = 0, planned = 0;
  double planner_worst = 0.0;
  for (size_t k = 0; k < job->part_count; ++k) {
    tg_range_plan_summary s;
    tg_range_plan_get_summary(job->plans[k], &s);
    compute_us += s.compute_us;
    searched += s.searched_points;
    planned += s.planned_points;
    if (s.worst_ratio > planner_worst) planner_worst = s.worst_ratio;
  }
  tg__strbuf_puts(b, ",\"range\":{");
  tg_cli_json_range_dims(b, r);
  tg__strbuf_printf(b, ",\"points\":%llu,\"worst_ratio\":%.6f,\"worst_at\":", (unsigned long long)r->point_count, worst);
  json_dims(b, &r->range, job->size_count ? job->sizes[worst_at].dims : r->at);
  tg__strbuf_printf(b, ",\"pieces\":%zu,\"piece_ranges\":[", s0.piece_count);
  for (size_t k = 0; k < s0.piece_count; ++k) {
    tg_range_piece pc;
    tg_range_plan_get_piece(job->plans[0], k, &pc);
    tg__strbuf_puts(b, k ? ",{\"dims\":[" : "{\"dims\":[");
    for (uint32_t d = 0; d < pc.range.count; ++d)
      tg__strbuf_printf(b, "%s[%lld,%lld]", d ? "," : "", (long long)pc.range.dim[d].lo, (long long)pc.range.dim[d].hi);
    tg__strbuf_printf(b, "],\"objects\":%zu,\"planner_worst_ratio\":%.6f}", pc.object_count, pc.worst_ratio);
  }
  tg__strbuf_printf(b, "],\"planner_worst_ratio\":%.6f,\"plan_us\":%llu,\"searched_points\":%llu,\"planned_points\":%llu,"
                       "\"in_place_kept\":%zu,\"in_place_dropped\":%zu,\"own_time_limit_ms\":",
                    planner_worst, (unsigned long long)compute_us, (unsigned long long)searched,
                    (unsigned long long)planned, s0.in_place_kept, s0.in_place_dropped);
  if (job->own_time_limit_ms == 0) tg__strbuf_puts(b, "\"default\"");
  else tg__strbuf_printf(b, "%u", job->own_time_limit_ms == TG_TIME_LIMIT_NONE ? 0 : job->own_time_limit_ms);
  tg__strbuf_puts(b, ",\"sizes\":[");
  for (size_t i = 0; i < job->size_count; ++i) {
    const tg_range_report_size *s = &job->sizes[i];
    tg__strbuf_puts(b, i ? ",{\"dims\":" : "{\"dims\":");
    json_dims(b, &r->range, s->dims);
    tg__strbuf_printf(b, ",\"bytes\":%llu,\"own_bytes\":%llu,\"upper_bound_bytes\":%llu,\"pool_bytes\":%llu,"
                         "\"lower_bound\":%llu,\"ratio\":%.6f,\"alone_bytes\":%llu,\"piece\":%u",
                      (unsigned long long)s->bytes, (unsigned long long)s->own_bytes,
                      (unsigned long long)s->upper_bound_bytes, (unsigned long long)s->pool_bytes,
                      (unsigned long long)s->lower_bound, s->own_bytes ? (double)s->bytes / (double)s->own_bytes : 1.0,
                      (unsigned long long)s->alone_bytes, s->piece);
    if (with_records) json_records(b, job, s->dims);
    tg__strbuf_puts(b, "}");
  }
  tg__strbuf_puts(b, "]}");
}

int tg_cli_range_svg(const char *cmd, const char *dir, const char *model_path, tg_storage storage, tg_mode mode,
                     const tg_cli_range_job *job, uint32_t dim_count, const char *title) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    tg_cli_error("%s: cannot create directory %s: %s", cmd, dir, strerror(errno));
    return 0;
  }
  const char *base = strrchr(model_path, '/') ? strrchr(model_path, '/') + 1 : model_path;
  char stem[256], path[4096];
  snprintf(stem, sizeof stem, "%s", base);
  char *dot = strrchr(stem, '.');
  if (dot && dot != stem) *dot = '\0';
  snprintf(path, sizeof path, "%s/%s.%s.%s.range.svg", dir, stem, tg_storage_name(storage), tg_mode_name(mode));
  char *svg = NULL;
  size_t len = 0;
  tg_status st = tg_report_render_range_svg(job->sizes, job->size_count, dim_count, title, job->alloc, &svg, &len);
  if (st != TG_OK) {
    tg_cli_error("%s: chart %s: %s", cmd, path, tg_status_string(st));
    return 0;
  }
  int ok = tg_cli_write_file(path, svg, len);
  tg_report_free(job->alloc, svg);
  return ok;
}

/* ------------------------------------------------------------------------------------------ */
/* `plan` over a range. */

/* Texture objects under an allocation cap: every object's bytes at every size (the planner
 * checks byte records itself). 0 with the error printed. */
static int texture_cap_holds(const tg_cli_plan_range_request *rq, const tg_model_range *r, tg_cli_range_job *job) {
  const tg_range_records *rr = r->primary;
  size_t n = tg_range_records_count(rr);
  tg_usage_record *recs = tg__calloc(job->alloc, n ? n : 1, sizeof *recs);
  if (recs == NULL) return 0;
  int ok = 1;
  for (uint64_t p = 0; ok && p < r->point_count; ++p) {
    int64_t dims[TG_RANGE_MAX_DIMS];
    tg_size_range_point(&r->range, p, dims);
    if (tg_range_plan_instantiate(job->plans[0], dims, recs, job->instances[0]) != TG_OK) {
      ok = 0;
      break;
    }
    tg_record_set set = {tg_range_records_dims(rr), n, recs, r->records->records->names, {0}};
    char cmd[96], at[64];
    tg_cli_range_size_name(&r->range, dims, at, sizeof at);
    snprintf(cmd, sizeof cmd, "plan: --max-allocation at size %s", at);
    ok = tg_cli_check_objects_cap(cmd, &set, job->instances[0], tg_precision_texel_bytes(rq->precision),
                                  rq->max_allocation);
  }
  tg__free(job->alloc, recs);
  return ok;
}

static void text_plan_range(tg__strbuf *b, const tg_cli_plan_range_request *rq, const tg_model_range *r,
                            const tg_cli_range_job *job) {
  const tg_record_set *set = r->records->records;
  tg_range_plan_summary s;
  tg_range_plan_get_summary(job->plans[0], &s);
  char what[160], name[64], h[32];
  tg_cli_range_text(r, what, sizeof what);
  tg__strbuf_printf(b, "%s: %zu records (%uD, %s), mode %s, storage %s %s, %zu tensors, %zu ops\n", rq->file,
                    set->count, set->dims, set->dims == 1 ? "bytes" : "texels", tg_mode_name(rq->mode),
                    tg_storage_name(rq->storage), tg_precision_name(rq->precision), r->model->graph->tensor_count,
                    r->model->graph->op_count);
  tg__strbuf_printf(b, "range %s: %llu sizes; one plan for all of them (%s, policy %s): %zu piece%s, planned in %.1f ms",
                    what, (unsigned long long)r->point_count, tg_strategy_name(rq->strategy), tg_policy_name(rq->policy),
                    s.piece_count, s.piece_count == 1 ? "" : "s", (double)s.compute_us / 1000.0);
  if (rq->strategy == TG_STRATEGY_BEST && rq->time_limit_ms != TG_TIME_LIMIT_NONE)
    tg__strbuf_printf(b, " (time limit %u ms for the whole range)", rq->time_limit_ms);
  tg__strbuf_printf(b, ", %llu sizes searched, %llu planned without search\n", (unsigned long long)s.searched_points,
                    (unsigned long long)s.planned_points);
  tg__strbuf_printf(b, "own best: each size planned alone with %s", tg_strategy_name(rq->strategy));
  if (rq->strategy == TG_STRATEGY_BEST) {
    if (job->own_time_limit_ms == TG_TIME_LIMIT_NONE) tg__strbuf_puts(b, " (no search)");
    else tg__strbuf_printf(b, " (time limit %u ms)", job->own_time_limit_ms);
  }
  tg__strbuf_puts(b, ", or the range planner's best plan there when smaller\n");
  if (rq->in_place)
    tg__strbuf_printf(b, "in place: %zu candidate pairs at every size; the range plan keeps %zu, drops %zu (sizes differ "
                         "at some size, or the chain would join records that conflict)\n",
                      r->in_place_count, s.in_place_kept, s.in_place_dropped);
  for (int g = 0; g < TG_STORAGE_FALLBACK_COUNT; ++g) {
    const tg_record_set *fs = r->records->fallbacks[tg_storage_fallback_at((uint32_t)g)].records;
    if (fs && fs->count)
      tg__strbuf_printf(b, "%zu tensors do not fit %s and fall back to %s (not in this plan; see tangram evaluate)\n",
                        fs->count, tg_storage_name(rq->storage), tg_storage_name(tg_storage_fallback_at((uint32_t)g)));
  }
  tg__strbuf_printf(b, "\n%-12s %14s %14s %8s %14s %14s %14s %6s   (bytes)\n", "size", "plan", "own best", "ratio",
                    "upper bound", "pool", "lower bound", "piece");
  size_t above = 0;
  for (size_t i = 0; i < job->size_count; ++i) {
    const tg_range_report_size *z = &job->sizes[i];
    tg_cli_range_size_name(&r->range, z->dims, name, sizeof name);
    above += z->bytes > z->upper_bound_bytes;
    tg__strbuf_printf(b, "%-12s %14llu %14llu %8.4f %14llu %14llu %14llu %6u\n", name, (unsigned long long)z->bytes,
                      (unsigned long long)z->own_bytes, z->own_bytes ? (double)z->bytes / (double)z->own_bytes : 1.0,
                      (unsigned long long)z->upper_bound_bytes, (unsigned long long)z->pool_bytes,
                      (unsigned long long)z->lower_bound, z->piece);
  }
  size_t at;
  double worst = tg_cli_range_job_worst(job, &at);
  tg_cli_range_size_name(&r->range, job->sizes[at].dims, name, sizeof name);
  tg__strbuf_printf(b, "\nworst ratio to the own best %.4f at %s (piece %u); above the upper-bound plan (%s) at %zu of "
                       "%zu sizes; every plan shown passed the validator\n",
                    worst, name, job->sizes[at].piece,
                    tg_report_format_bytes(job->sizes[0].upper_bound_bytes, h, sizeof h), above, job->size_count);
  for (size_t k = 0; s.piece_count > 1 && k < s.piece_count; ++k) {
    tg_range_piece pc;
    tg_range_plan_get_piece(job->plans[0], k, &pc);
    int64_t lo[2] = {pc.range.dim[0].lo, pc.range.dim[1].lo}, hi[2] = {pc.range.dim[0].hi, pc.range.dim[1].hi};
    char a[64], z[64];
    tg_cli_range_size_name(&pc.range, lo, a, sizeof a);
    tg_cli_range_size_name(&pc.range, hi, z, sizeof z);
    tg__strbuf_printf(b, "piece %zu: %s..%s", k, a, z);
    if (rq->mode == TG_MODE_OBJECTS) tg__strbuf_printf(b, ", %zu objects", pc.object_count);
    tg__strbuf_puts(b, "\n");
  }
}

tg_status tg_cli_range_relation(const tg_model_range *r, tg_policy policy, const tg_allocator *alloc,
                                tg_policy_relation **rel, tg_error_info *err) {
  *rel = NULL;
  if (policy == TG_POLICY_SERIAL) return TG_OK;
  tg_schedule *sched = NULL;
  tg_status st = tg_schedule_create(r->model->graph, NULL, alloc, &sched, err);
  if (st == TG_OK) {
    st = tg_policy_relation_create(sched, policy, r->records->tensor_of, r->records->records->count, alloc, rel);
    if (st != TG_OK) tg__error(err, st, "building the %s relation failed: %s", tg_policy_name(policy), tg_status_string(st));
  }
  tg_schedule_destroy(sched);
  return st;
}

int tg_cli_plan_range(const tg_cli_plan_range_request *rq) {
  if (rq->refused) {
    tg_cli_error("plan: %s does not take a range of sizes: give each dynamic dimension one size", rq->refused);
    return TG_EXIT_USAGE;
  }
  uint64_t own = rq->time_limit_ms;
  if (rq->range.own_time_s &&
      (!tg_cli_parse_u64(rq->range.own_time_s, 0, &own) || own >= TG_TIME_LIMIT_NONE)) {
    tg_cli_error("plan: --own-time-limit must be milliseconds (0 to 4294967294), not '%s'", rq->range.own_time_s);
    return TG_EXIT_USAGE;
  }
  if (rq->range.own_time_s && own == 0) own = TG_TIME_LIMIT_NONE;
  tg_failing_allocator fa;
  const tg_allocator *alloc = tg_cli_allocator(&fa);
  tg_error_info err = {{0}};
  tg_model_range_desc desc = {rq->model, rq->storage, rq->precision, rq->limits, rq->plan_io, 1, 1};
  tg_model_range *r = NULL;
  tg_status st = tg_model_range_load(rq->file, &desc, alloc, &r, &err);
  if (st != TG_OK) {
    tg_cli_error("%s", err.message[0] ? err.message : tg_status_string(st));
    return tg_cli_exit_code(st);
  }
  tg_cli_sizes sizes;
  tg_cli_range_job job;
  memset(&job, 0, sizeof job);
  job.alloc = alloc;
  job.own_time_limit_ms = (uint32_t)own;
  tg_policy_relation *rel = NULL;
  int code = rq->range.sizes ? tg_cli_sizes_parse("plan", rq->range.sizes, r, alloc, &sizes)
                             : tg_cli_sizes_default("plan", &r->range, TG_CLI_REPORT_SIZES_ALL,
                                                    TG_CLI_REPORT_SIZES_BETWEEN, alloc, &sizes);
  const tg_range_records *rr = r->primary;
  const uint32_t dims = tg_range_records_dims(rr);
  tg_storage to;
  const tg_model_fallback *fb = tg_cli_first_fallback(r->records, &to);
  if (code == TG_EXIT_OK && rq->no_fallback && fb) {
    tg_cli_error("plan: tensor %s does not fit %s: %s (--no-fallback; %zu tensors in all)",
                 r->model->graph->tensors[fb->tensor_of[0]].name, tg_storage_name(rq->storage), fb->reasons[0],
                 tg_model_records_fallback_count(r->records));
    code = TG_EXIT_USAGE;
  } else if (code == TG_EXIT_OK && rq->save && !tg_cli_range_plan_savable("plan", r)) {
    code = TG_EXIT_USAGE;
  } else if (code == TG_EXIT_OK && rq->mode == TG_MODE_OFFSETS && dims != 1) {
    tg_cli_error("plan: offsets mode needs 1D records (%s gives %uD texture extents)", rq->file, dims);
    code = TG_EXIT_USAGE;
  } else if (code == TG_EXIT_OK && !tg_strategy_applies(rq->strategy, rq->mode, dims)) {
    tg_cli_error("plan: strategy %s does not plan %uD records in %s mode", tg_strategy_name(rq->strategy), dims,
                 tg_mode_name(rq->mode));
    code = TG_EXIT_USAGE;
  }
  if (code == TG_EXIT_OK && (st = tg_cli_range_relation(r, rq->policy, alloc, &rel, &err)) != TG_OK) {
    tg_cli_error("plan: %s", err.message);
    code = tg_cli_exit_code(st);
  }
  if (code == TG_EXIT_OK) {
    tg_plan_options o = {0};
    o.mode = rq->mode;
    o.strategy = rq->strategy;
    o.fit = rq->fit;
    o.alignment = rq->alignment;
    o.relation = tg_policy_relation_get(rel);
    o.beam_width = rq->beam_width;
    o.in_place = rq->in_place ? r->in_place : NULL;
    o.in_place_count = rq->in_place ? r->in_place_count : 0;
    o.max_allocation = rq->max_allocation;
    o.time_limit_ms = rq->time_limit_ms;
    o.seed = rq->seed;
    st = tg_cli_range_job_add(&job, rr, rq->storage, &o, 0, rq->precision, &err);
    if (st != TG_OK) {
      if (st == TG_ERROR_LIMIT && rq->max_allocation)
        tg_cli_error("plan: --max-allocation does not hold over the range: %s", err.message);
      else tg_cli_error("plan: %s", err.message[0] ? err.message : tg_status_string(st));
      code = st == TG_ERROR_LIMIT && rq->max_allocation ? TG_EXIT_USAGE : tg_cli_exit_code(st);
    }
  }
  if (code == TG_EXIT_OK && rq->max_allocation && dims > 1 && rq->mode == TG_MODE_OBJECTS &&
      !texture_cap_holds(rq, r, &job))
    code = TG_EXIT_USAGE;
  if (code == TG_EXIT_OK &&
      (st = tg_cli_range_job_report(&job, sizes.point, sizes.count, rq->precision, &err)) != TG_OK) {
    tg_cli_error("plan: %s", err.message[0] ? err.message : tg_status_string(st));
    code = st == TG_ERROR_INVALID_PLAN ? TG_EXIT_FAILURE : tg_cli_exit_code(st);
  }
  char saved_fp[2 * TG_FINGERPRINT_BYTES + 1] = "";
  tg_range_plan_summary sm = {0};
  if (code == TG_EXIT_OK) tg_range_plan_get_summary(job.plans[0], &sm);
  if (code == TG_EXIT_OK && rq->save) {
    tg_cli_input_options io = {rq->storage, rq->precision, rq->plan_io, rq->limits, rq->model, 1, 1};
    code = tg_cli_range_plan_save(rq->save, r, job.plans[0], rq->model, rq->file, &io, rq->policy, rq->strategy,
                                  rq->mode == TG_MODE_OFFSETS ? rq->alignment : 0, alloc, saved_fp);
  }
  if (code == TG_EXIT_OK) {
    tg__strbuf out;
    tg__strbuf_init(&out, alloc);
    if (rq->json) {
      const tg_record_set *set = r->records->records;
      tg__strbuf_puts(&out, "{\"input\":");
      tg__strbuf_json_string(&out, rq->file);
      tg__strbuf_printf(&out, ",\"storage\":\"%s\",\"precision\":\"%s\",\"tensors\":%zu,\"ops\":%zu,\"records\":%zu,"
                              "\"dims\":%u,\"mode\":\"%s\",\"strategy\":\"%s\",\"policy\":\"%s\",\"unit\":\"%s\","
                              "\"alignment\":%llu",
                        tg_storage_name(rq->storage), tg_precision_name(rq->precision), r->model->graph->tensor_count,
                        r->model->graph->op_count, set->count, set->dims, tg_mode_name(rq->mode),
                        tg_strategy_name(rq->strategy), tg_policy_name(rq->policy), set->dims == 1 ? "bytes" : "texels",
                        (unsigned long long)rq->alignment);
      if (rq->max_allocation) tg__strbuf_printf(&out, ",\"max_allocation\":%llu", (unsigned long long)rq->max_allocation);
      tg__strbuf_puts(&out, ",\"names\":[");
      for (size_t i = 0; i < set->count; ++i) {
        if (i) tg__strbuf_puts(&out, ",");
        tg__strbuf_json_string(&out, set->names[i]);
      }
      tg__strbuf_puts(&out, "],\"tensor_of\":[");
      for (size_t i = 0; i < set->count; ++i) tg__strbuf_printf(&out, "%s%u", i ? "," : "", r->records->tensor_of[i]);
      tg__strbuf_puts(&out, "]");
      tg_cli_json_fallbacks(&out, r->records);
      if (rq->in_place) tg__strbuf_printf(&out, ",\"in_place_candidates\":%zu", r->in_place_count);
      tg_cli_json_range(&out, &job, r, 1);
      if (rq->save) {
        tg__strbuf_puts(&out, ",\"saved\":{\"file\":");
        tg__strbuf_json_string(&out, rq->save);
        tg__strbuf_printf(&out, ",\"policy\":\"%s\",\"strategy\":\"%s\",\"pieces\":%zu,\"fingerprint\":\"%s\"}",
                          tg_policy_name(rq->policy), tg_strategy_name(rq->strategy), sm.piece_count, saved_fp);
      }
      tg__strbuf_puts(&out, "}\n");
    } else {
      text_plan_range(&out, rq, r, &job);
      if (rq->save)
        tg__strbuf_printf(&out, "\nsaved the plan over the range (%s, policy %s, %zu piece%s) to %s (the first size's "
                                "records fingerprint %.16s...)\n",
                          tg_strategy_name(rq->strategy), tg_policy_name(rq->policy), sm.piece_count,
                          sm.piece_count == 1 ? "" : "s", rq->save, saved_fp);
    }
    code = tg_cli_print_report(&out, TG_EXIT_OK);
  }
  if (code == TG_EXIT_OK && rq->range.svg_dir) {
    char what[160], title[512];
    tg_cli_range_text(r, what, sizeof what);
    const char *base = strrchr(rq->file, '/') ? strrchr(rq->file, '/') + 1 : rq->file;
    snprintf(title, sizeof title, "%s over %s: %s %s (%s), %s", base, what, tg_storage_name(rq->storage),
             tg_mode_name(rq->mode), tg_strategy_name(rq->strategy), tg_precision_name(rq->precision));
    if (!tg_cli_range_svg("plan", rq->range.svg_dir, rq->file, rq->storage, rq->mode, &job, r->range.count, title))
      code = TG_EXIT_FAILURE;
  }
  tg_cli_range_job_free(&job);
  tg_policy_relation_destroy(rel);
  tg_cli_sizes_free(&sizes);
  tg_model_range_destroy(r);
  return code;
}
