/* `tangram evaluate --speed` (tools/speed_cli.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tangram/layout.h"
#include "tangram/profile.h"
#include "tangram/speed.h"
#include "tools/cli.h"
#include "tools/input.h"
#include "tools/speed_cli.h"

#define SPEED_MODES 2

typedef struct speed_row {
  tg_storage storage;
  tg_mode mode;
  const tg_evaluation_result *result; /* the evaluation's best of this storage and mode */
  int timed;
  char skip[TG_ERROR_MESSAGE_MAX];
  uint64_t realised_bytes;             /* what the device allocated */
  uint64_t allocations;                /* ... in so many allocations */
  uint64_t timed_bytes;                /* the bytes of the plans timed, as the row counts them */
  char timed_plan[TG_ERROR_MESSAGE_MAX]; /* "exact" (the row's plans) or what differs */
  tg_speed_result speed;
} speed_row;

struct tg_cli_speed {
  const tg_allocator *alloc;
  char device[300];
  tg_backend_kind backend;
  uint32_t repeats;
  int estimated;             /* --profile: times estimated from a device profile */
  speed_row rows[TG_STORAGE_COUNT * SPEED_MODES];
  size_t row_count;
};

int tg_cli_speed_option(int argc, char **argv, int *i, tg_cli_speed_request *req) {
  if (strcmp(argv[*i], "--speed") == 0) {
    req->speed = 1;
    ++*i;
    return 1;
  }
  static const char *const names[] = {"--backend", "--device", "--repeat", "--profile"};
  const char **const targets[] = {&req->backend, &req->device, &req->repeat, &req->profile};
  size_t which;
  return tg_cli_option_table(argc, argv, i, names, targets, 4, &which);
}

static int parse_repeat(const tg_cli_speed_request *req, uint32_t *out) {
  uint64_t n = TG_CLI_SPEED_DEFAULT_REPEATS;
  if (req->repeat && (!tg_cli_parse_u64(req->repeat, 0, &n) || n == 0 || n > 100000)) {
    tg_cli_error("evaluate: --repeat must be a whole number from 1 to 100000, not '%s'", req->repeat);
    return 0;
  }
  *out = (uint32_t)n;
  return 1;
}

int tg_cli_speed_check(const tg_cli_speed_request *req) {
  if (!req->speed) {
    if (req->backend || req->device || req->repeat || req->profile) {
      tg_cli_error("evaluate: --backend, --device, --repeat and --profile need --speed");
      return 0;
    }
    return 1;
  }
  uint32_t n;
  if (!parse_repeat(req, &n)) return 0;
  if (req->profile && (req->backend || req->device || req->repeat)) {
    tg_cli_error("evaluate: --profile estimates without a device: it does not combine with --backend, --device "
                 "or --repeat");
    return 0;
  }
  if (req->backend && strcmp(req->backend, "opencl") != 0 && strcmp(req->backend, "vulkan") != 0) {
    tg_cli_error("evaluate: --backend must be opencl or vulkan, not '%s'", req->backend);
    return 0;
  }
  return 1;
}

/* One part of a row realised: what the device creates for its records, the arena records in
 * offsets mode, a plan made here when the evaluation's cannot run on this device, and the
 * realisation. */
typedef struct realised {
  tg_tensor_resource *resources;
  tg_record_set *arena;
  tg_plan *plan;
  tg_realization *z;
} realised;

static void realised_free(const tg_allocator *a, realised *r) {
  tg_realization_destroy(r->z);
  tg_plan_destroy(r->plan);
  tg_record_set_destroy(r->arena);
  tg__free(a, r->resources);
  memset(r, 0, sizeof *r);
}

/* Append "; " and a formatted clause to `buf`. */
static void add_clause(char *buf, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void add_clause(char *buf, size_t size, const char *fmt, ...) {
  size_t n = strlen(buf);
  if (n && n + 2 < size) n += (size_t)snprintf(buf + n, size - n, "; ");
  va_list ap;
  va_start(ap, fmt);
  if (n < size) vsnprintf(buf + n, size - n, fmt, ap);
  va_end(ap);
}

/* Realise one part of a row: the evaluation's own plan when this device can run it, else a
 * plan made here with the row's strategy (`why` then says what differs): an offsets plan whose
 * offsets miss the device's real sizes and alignments, or a plan with elementwise pairs on
 * images on a device whose kernels cannot read and write one image. `*bytes`: the bytes of the
 * plan realised, as the evaluation counts them. */
static tg_status realise_part(tg_device *dev, const tg_evaluation_part *part, tg_strategy strategy,
                              tg_precision precision, uint64_t max_allocation, const tg_allocator *alloc,
                              realised *out, uint64_t *bytes, char *why, size_t why_size, tg_error_info *err) {
  memset(out, 0, sizeof *out);
  const tg_record_set *set = part->records;
  const tg_plan *plan = part->plan;
  tg_status st = tg_cli_resources(set, part->storage, precision, alloc, &out->resources);
  if (st != TG_OK) return tg__error(err, st, "resources: %s", tg_status_string(st));
  const int offsets = plan->mode == TG_MODE_OFFSETS;
  const tg_usage_record *recs = set->records;
  if (offsets) {
    st = tg_device_compute_arena_records(dev, out->resources, set->records, set->count, precision, alloc,
                                         &out->arena);
    if (st != TG_OK) return tg__error(err, st, "arena records: %s", tg_status_string(st));
    recs = out->arena->records;
  }
  size_t elementwise = 0;
  if (part->storage != TG_STORAGE_BUFFER && !tg_device_get_info(dev)->read_write_images)
    for (size_t k = 0; k < plan->in_place_count; ++k) elementwise += !plan->in_place[k].view;
  const int misplaced = offsets && tg_plan_validate(recs, set->count, 1, plan, 0, NULL, alloc, NULL) != TG_OK;
  if (elementwise || misplaced) {
    /* The pairs that stay: views, and elementwise ones where allowed, of one size here. */
    tg_in_place_pair *pairs = tg__calloc(alloc, plan->in_place_count ? plan->in_place_count : 1, sizeof *pairs);
    if (pairs == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    size_t kept = 0;
    for (size_t k = 0; k < plan->in_place_count; ++k) {
      const tg_in_place_pair *p = &plan->in_place[k];
      const tg_extent a = recs[p->input].size, b = recs[p->output].size;
      if ((p->view || !elementwise) && a.w == b.w && a.h == b.h && a.d == b.d) pairs[kept++] = *p;
    }
    tg_plan_options opt = {
        .mode = plan->mode, .strategy = strategy, .fit = TG_FIT_BEST, .in_place = pairs,
        .in_place_count = kept, .max_allocation = offsets || set->dims == 1 ? max_allocation : 0
    };
    st = tg_plan_compute(recs, set->count, offsets ? 1 : set->dims, &opt, alloc, &out->plan);
    tg__free(alloc, pairs);
    if (st != TG_OK) return tg__error(err, st, "planning again: %s", tg_status_string(st));
    plan = out->plan;
    if (misplaced)
      add_clause(why, why_size, "%s offsets placed again for the device's sizes and alignments",
                 tg_storage_name(part->storage));
    if (elementwise)
      add_clause(why, why_size, "%s planned again without its %zu elementwise in-place pair%s (this device "
                 "cannot read and write one image in one kernel)", tg_storage_name(part->storage), elementwise,
                 elementwise == 1 ? "" : "s");
  }
  *bytes = plan->total * (!offsets && set->dims > 1 ? tg_precision_texel_bytes(precision) : 1);
  tg_realize_desc d = {
      .plan = plan, .records = recs, .record_count = set->count, .dims = offsets ? 1 : set->dims,
      .resources = out->resources, .precision = precision
  };
  return tg_realization_create(dev, &d, alloc, &out->z, err);
}

/* Time the plans of a row: the evaluation's, part by part (realise_part). */
static void time_one(tg_device *dev, const tg_graph *graph, const tg_evaluation *ev, uint64_t max_allocation,
                     uint32_t repeats, const tg_allocator *alloc, speed_row *row) {
  tg_evaluation_part parts[TG_EVALUATION_MAX_PARTS];
  realised rs[TG_EVALUATION_MAX_PARTS];
  tg_speed_part sp[TG_EVALUATION_MAX_PARTS];
  memset(rs, 0, sizeof rs);
  size_t n = 0;
  tg_error_info err = {{0}};
  char why[sizeof row->timed_plan] = "";
  tg_status st = tg_evaluation_get_parts(ev, (size_t)(row->result - ev->results), parts, &n);
  if (st != TG_OK) tg__error(&err, st, "the evaluation kept no plan for this row");
  for (size_t i = 0; i < n && st == TG_OK; ++i) {
    uint64_t bytes = 0;
    st = realise_part(dev, &parts[i], row->result->strategy, ev->precision, max_allocation, alloc, &rs[i], &bytes,
                      why, sizeof why, &err);
    row->timed_bytes += bytes;
    sp[i] = (tg_speed_part){rs[i].z, parts[i].tensor_of};
  }
  if (st == TG_OK) {
    tg_speed_desc d = {.graph = graph, .parts = sp, .part_count = n, .repeats = repeats, .warmup = 1};
    st = tg_realization_time(&d, &row->speed, &err);
  }
  if (st == TG_OK) {
    row->timed = 1;
    snprintf(row->timed_plan, sizeof row->timed_plan, "%s", why[0] ? why : "exact");
    for (size_t i = 0; i < n; ++i) {
      tg_realization_stats stats;
      tg_realization_get_stats(rs[i].z, &stats);
      row->realised_bytes += stats.allocated_bytes;
      row->allocations += stats.allocations;
    }
  } else {
    snprintf(row->skip, sizeof row->skip, "%s", err.message[0] ? err.message : tg_status_string(st));
  }
  for (size_t i = 0; i < n; ++i) realised_free(alloc, &rs[i]);
}

/* --profile: every storage and mode estimated from a device profile, over the records the
 * evaluation planned (its fallback groups priced in their storages). */
/* The next row of `s`, for the evaluation's best plan of `storage` and `mode`; NULL when it
 * has none. */
static speed_row *add_row(tg_cli_speed *s, const tg_evaluation *ev, tg_storage storage, tg_mode mode) {
  const tg_evaluation_result *r = tg_cli_best_of_mode(ev, storage, mode);
  if (r == NULL) return NULL;
  speed_row *row = &s->rows[s->row_count++];
  row->storage = storage;
  row->mode = mode;
  row->result = r;
  return row;
}

static tg_status estimate_all(tg_cli_speed *s, const char *path, const tg_graph *graph, const tg_evaluation *ev,
                              const tg_allocator *alloc, tg_error_info *err) {
  char *text = NULL;
  size_t len = 0;
  tg_status st = tg__read_file(path, alloc, &text, &len, err);
  if (st != TG_OK) return st;
  tg_device_profile p;
  tg_error_info perr = {{0}};
  st = tg_device_profile_read(text, len, &p, &perr);
  tg__free(alloc, text);
  if (st != TG_OK) return tg__error(err, st, "%s: %s", path, perr.message);
  snprintf(s->device, sizeof s->device, "%s: %.200s, estimated from %.60s", p.backend, p.device, path);
  s->estimated = 1;
  for (int st_i = 0; st_i < TG_STORAGE_COUNT; ++st_i) {
    tg_profile_estimate e;
    tg_error_info eerr = {{0}};
    tg_status es = TG_OK;
    int estimated = 0;
    for (int m = 0; m < SPEED_MODES; ++m) {
      speed_row *row = add_row(s, ev, (tg_storage)st_i, (tg_mode)m);
      if (row == NULL) continue;
      const tg_evaluation_result *r = row->result;
      int image = tg_storage_is_texture((tg_storage)st_i);
      if (image && !p.images) {
        snprintf(row->skip, sizeof row->skip, "the profiled device has no images");
        continue;
      }
      if (image && m == TG_MODE_OFFSETS && !p.arena_images) {
        snprintf(row->skip, sizeof row->skip, "the profiled device cannot place images in one arena");
        continue;
      }
      /* Aliasing moves no bytes: both modes of a storage cost the same traffic. */
      if (!estimated) {
        estimated = 1;
        es = tg_device_profile_estimate(&p, graph, tg_evaluation_get_records(ev, (tg_storage)st_i), &e, &eerr);
      }
      if (es != TG_OK) {
        snprintf(row->skip, sizeof row->skip, "%s", eerr.message[0] ? eerr.message : tg_status_string(es));
        continue;
      }
      row->timed = 1;
      snprintf(row->timed_plan, sizeof row->timed_plan, "exact");
      row->timed_bytes = r->bytes;
      row->speed.median_ms = row->speed.min_ms = row->speed.max_ms = e.total_ms;
      memcpy(row->speed.class_ms, e.class_ms, sizeof e.class_ms);
    }
  }
  return TG_OK;
}

tg_status tg_cli_speed_run(const tg_cli_speed_request *req, const tg_graph *graph, const tg_evaluation *ev,
                           uint64_t max_allocation, const tg_allocator *alloc, tg_cli_speed **out,
                           tg_error_info *err) {
  *out = NULL;
  tg_cli_speed *s = tg__calloc(alloc, 1, sizeof *s);
  if (s == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
  s->alloc = alloc;
  parse_repeat(req, &s->repeats);
  if (req->profile) {
    tg_status st = estimate_all(s, req->profile, graph, ev, alloc, err);
    if (st != TG_OK) {
      tg__free(alloc, s);
      return st;
    }
    *out = s;
    return TG_OK;
  }
  tg_device_options opt;
  memset(&opt, 0, sizeof opt);
  opt.backend = TG_BACKEND_OPENCL;
  if (req->backend) tg_backend_from_name(req->backend, &opt.backend);
  opt.device = req->device;
  s->backend = opt.backend;
  tg_device *dev = NULL;
  tg_status st = tg_device_open(&opt, alloc, &dev, NULL, NULL, err);
  if (st != TG_OK) {
    tg__free(alloc, s);
    return st;
  }
  const tg_device_info *info = tg_device_get_info(dev);
  snprintf(s->device, sizeof s->device, "%s: %s", tg_backend_name(info->backend), info->name);
  for (int st_i = 0; st_i < TG_STORAGE_COUNT; ++st_i)
    for (int m = 0; m < SPEED_MODES; ++m) {
      speed_row *row = add_row(s, ev, (tg_storage)st_i, (tg_mode)m);
      if (row == NULL) continue;
      if (tg_storage_is_texture(row->storage) && !info->images) {
        snprintf(row->skip, sizeof row->skip, "the device has no images");
        continue;
      }
      time_one(dev, graph, ev, max_allocation, s->repeats, alloc, row);
      /* A backend without proxies cannot time anything: an error, not a skip. */
      if (!row->timed && strstr(row->skip, "has no proxy kernels")) {
        st = tg__error(err, TG_ERROR_UNSUPPORTED, "%s", row->skip);
        tg_device_close(dev);
        tg__free(alloc, s);
        return st;
      }
    }
  tg_device_close(dev);
  *out = s;
  return TG_OK;
}

void tg_cli_speed_free(tg_cli_speed *s) {
  if (s) tg__free(s->alloc, s);
}

static const speed_row *fastest_row(const tg_cli_speed *s) {
  const speed_row *f = NULL;
  for (size_t i = 0; i < s->row_count; ++i)
    if (s->rows[i].timed && (f == NULL || s->rows[i].speed.median_ms < f->speed.median_ms)) f = &s->rows[i];
  return f;
}

static const speed_row *smallest_row(const tg_cli_speed *s) {
  const speed_row *f = NULL;
  for (size_t i = 0; i < s->row_count; ++i)
    if (s->rows[i].timed &&
        (f == NULL || s->rows[i].result->bytes < f->result->bytes ||
         (s->rows[i].result->bytes == f->result->bytes && s->rows[i].speed.median_ms < f->speed.median_ms)))
      f = &s->rows[i];
  return f;
}

/* "fastest: texture_2d objects, 1.23 ms (12% faster than the smallest) for 4.5 MiB (+30%
 * memory); smallest: buffer offsets, 3.4 MiB, 1.40 ms" */
static void recommendation_text(tg__strbuf *b, const tg_cli_speed *s) {
  const speed_row *f = fastest_row(s), *m = smallest_row(s);
  if (f == NULL) {
    tg__strbuf_puts(b, "no storage could be timed");
    return;
  }
  char fb[32], mb[32];
  tg_report_format_bytes(f->result->bytes, fb, sizeof fb);
  tg_report_format_bytes(m->result->bytes, mb, sizeof mb);
  if (f == m) {
    tg__strbuf_printf(b, "fastest and smallest: %s %s, %.3f ms, %s", tg_storage_name(f->storage),
                      tg_mode_name(f->mode), f->speed.median_ms, fb);
    return;
  }
  double faster = m->speed.median_ms > 0 ? 100.0 * (1.0 - f->speed.median_ms / m->speed.median_ms) : 0.0;
  double more = m->result->bytes ? 100.0 * ((double)f->result->bytes / (double)m->result->bytes - 1.0) : 0.0;
  tg__strbuf_printf(b,
                    "fastest: %s %s, %.3f ms, %s: %.0f%% less time than the smallest for %+.0f%% memory; "
                    "smallest: %s %s, %s, %.3f ms: %+.0f%% time for %.0f%% less memory",
                    tg_storage_name(f->storage), tg_mode_name(f->mode), f->speed.median_ms, fb, faster, more,
                    tg_storage_name(m->storage), tg_mode_name(m->mode), mb, m->speed.median_ms,
                    f->speed.median_ms > 0 ? 100.0 * (m->speed.median_ms / f->speed.median_ms - 1.0) : 0.0,
                    f->result->bytes ? 100.0 * (1.0 - (double)m->result->bytes / (double)f->result->bytes) : 0.0);
}

void tg_cli_speed_text(tg__strbuf *b, const tg_cli_speed *s) {
  if (s->estimated)
    tg__strbuf_printf(b, "\nspeed, ESTIMATED from a device profile (memory-access proxies of the ops, not "
                         "inference time): %s\n",
                      s->device);
  else
    tg__strbuf_printf(b, "\nspeed (memory-access proxies of the ops, not inference time) on %s; %u timed runs "
                         "after 1 warm-up:\n",
                      s->device, s->repeats);
  tg__strbuf_printf(b, "%-18s %-8s %12s %10s %10s %10s", "storage", "mode", "bytes", "median ms", "min ms",
                    "max ms");
  for (int c = 0; c < TG_OP_CLASS_COUNT; ++c) tg__strbuf_printf(b, " %14s", tg_op_class_name((tg_op_class)c));
  tg__strbuf_puts(b, "\n");
  for (size_t i = 0; i < s->row_count; ++i) {
    const speed_row *r = &s->rows[i];
    char human[32];
    tg__strbuf_printf(b, "%-18s %-8s %12s", tg_storage_name(r->storage), tg_mode_name(r->mode),
                      tg_report_format_bytes(r->result->bytes, human, sizeof human));
    if (!r->timed) {
      tg__strbuf_printf(b, "  skipped: %s\n", r->skip);
      continue;
    }
    tg__strbuf_printf(b, " %10.3f %10.3f %10.3f", r->speed.median_ms, r->speed.min_ms, r->speed.max_ms);
    for (int c = 0; c < TG_OP_CLASS_COUNT; ++c) tg__strbuf_printf(b, " %14.3f", r->speed.class_ms[c]);
    tg__strbuf_puts(b, "\n");
    if (strcmp(r->timed_plan, "exact") != 0)
      tg__strbuf_printf(b, "  (timed another plan of %s: %s)\n",
                        tg_report_format_bytes(r->timed_bytes, human, sizeof human), r->timed_plan);
  }
  tg__strbuf_puts(b, "(per class: median ms of each class's proxies)\n");
  recommendation_text(b, s);
  tg__strbuf_puts(b, "\n");
}

static const speed_row *row_of(const tg_cli_speed *s, const tg_evaluation_result *r) {
  for (size_t i = 0; i < s->row_count; ++i)
    if (s->rows[i].result == r) return &s->rows[i];
  return NULL;
}

void tg_cli_speed_json_result(tg__strbuf *b, const tg_cli_speed *s, const tg_evaluation *ev,
                              const tg_evaluation_result *r) {
  (void)ev;
  const speed_row *row = s ? row_of(s, r) : NULL;
  if (row == NULL || !row->timed) return;
  tg__strbuf_printf(b, ",\"speed\":{\"median_ms\":%.6f,\"min_ms\":%.6f,\"max_ms\":%.6f,\"repeats\":%u,",
                    row->speed.median_ms, row->speed.min_ms, row->speed.max_ms, row->speed.repeats);
  tg__strbuf_puts(b, "\"timed_plan\":");
  tg__strbuf_json_string(b, row->timed_plan);
  tg__strbuf_printf(b, ",\"timed_bytes\":%llu,", (unsigned long long)row->timed_bytes);
  if (s->estimated)
    tg__strbuf_puts(b, "\"estimated\":true,");
  else
    tg__strbuf_printf(b, "\"realised_bytes\":%llu,\"allocations\":%llu,\"dispatches\":%llu,",
                      (unsigned long long)row->realised_bytes, (unsigned long long)row->allocations,
                      (unsigned long long)row->speed.dispatches);
  tg__strbuf_puts(b, "\"per_class\":{");
  for (int c = 0; c < TG_OP_CLASS_COUNT; ++c)
    tg__strbuf_printf(b, "%s\"%s\":%.6f", c ? "," : "", tg_op_class_name((tg_op_class)c), row->speed.class_ms[c]);
  tg__strbuf_puts(b, "}}");
}

static void json_row_ref(tg__strbuf *b, const speed_row *r) {
  if (r == NULL) {
    tg__strbuf_puts(b, "null");
    return;
  }
  tg__strbuf_printf(b, "{\"storage\":\"%s\",\"mode\":\"%s\",\"bytes\":%llu,\"median_ms\":%.6f}",
                    tg_storage_name(r->storage), tg_mode_name(r->mode), (unsigned long long)r->result->bytes,
                    r->speed.median_ms);
}

void tg_cli_speed_json_top(tg__strbuf *b, const tg_cli_speed *s) {
  tg__strbuf_puts(b, ",\"speed_device\":");
  tg__strbuf_json_string(b, s->device);
  tg__strbuf_printf(b, ",\"speed_estimated\":%s", s->estimated ? "true" : "false");
  tg__strbuf_puts(b, ",\"speed_recommendation\":{\"fastest\":");
  json_row_ref(b, fastest_row(s));
  tg__strbuf_puts(b, ",\"smallest\":");
  json_row_ref(b, smallest_row(s));
  tg__strbuf text;
  tg__strbuf_init(&text, s->alloc);
  recommendation_text(&text, s);
  tg__strbuf_puts(b, ",\"text\":");
  tg__strbuf_json_string(b, text.failed || text.data == NULL ? "" : text.data);
  tg__strbuf_free(&text);
  tg__strbuf_puts(b, "},\"speed_skipped\":[");
  int first = 1;
  for (size_t i = 0; i < s->row_count; ++i) {
    const speed_row *r = &s->rows[i];
    if (r->timed) continue;
    tg__strbuf_printf(b, "%s{\"storage\":\"%s\",\"mode\":\"%s\",\"reason\":", first ? "" : ",",
                      tg_storage_name(r->storage), tg_mode_name(r->mode));
    tg__strbuf_json_string(b, r->skip);
    tg__strbuf_puts(b, "}");
    first = 0;
  }
  tg__strbuf_puts(b, "]");
}

/* ------------------------------------------------------------------------------------------ */
/* Memory versus time: one point per timed plan. */

int tg_cli_speed_svg(const tg_cli_speed *s, const char *dir, const char *stem, const char *title,
                     const tg_allocator *alloc) {
  double max_ms = 0, max_mib = 0;
  for (size_t i = 0; i < s->row_count; ++i) {
    const speed_row *r = &s->rows[i];
    if (!r->timed) continue;
    double mib = (double)r->result->bytes / 1048576.0;
    if (r->speed.max_ms > max_ms) max_ms = r->speed.max_ms;
    if (mib > max_mib) max_mib = mib;
  }
  if (max_ms <= 0) max_ms = 1;
  if (max_mib <= 0) max_mib = 1;
  max_ms *= 1.1;
  max_mib *= 1.1;
  const double W = 900, H = 600, L = 80, R = 30, T = 50, B = 60;
  tg__strbuf b;
  tg__strbuf_init(&b, alloc);
  tg__strbuf_printf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                        "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                    W, H);
  tg__strbuf_printf(&b, "<text x=\"%.0f\" y=\"24\" font-size=\"14\">", L);
  tg__strbuf_xml(&b, title);
  tg__strbuf_puts(&b, "</text>\n");
  tg__strbuf_printf(&b, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, H - B, W - R, H - B);
  tg__strbuf_printf(&b, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, T, L, H - B);
  for (int k = 0; k <= 5; ++k) {
    double x = L + (W - L - R) * k / 5.0, y = (H - B) - (H - T - B) * k / 5.0;
    tg__strbuf_printf(&b, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%.2f</text>\n", x, H - B + 18,
                      max_mib * k / 5.0);
    tg__strbuf_printf(&b, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n", L - 6, y + 4,
                      max_ms * k / 5.0);
  }
  tg__strbuf_printf(&b, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">memory (MiB, planned)</text>\n",
                    (L + W - R) / 2, H - 16);
  tg__strbuf_printf(&b, "<text x=\"18\" y=\"%.0f\" transform=\"rotate(-90 18 %.0f)\" text-anchor=\"middle\">"
                        "proxy time (ms, median; bar: min to max)</text>\n",
                    (T + H - B) / 2, (T + H - B) / 2);
  for (size_t i = 0; i < s->row_count; ++i) {
    const speed_row *r = &s->rows[i];
    if (!r->timed) continue;
    double x = L + (W - L - R) * ((double)r->result->bytes / 1048576.0) / max_mib;
    double y = (H - B) - (H - T - B) * r->speed.median_ms / max_ms;
    double y0 = (H - B) - (H - T - B) * r->speed.min_ms / max_ms;
    double y1 = (H - B) - (H - T - B) * r->speed.max_ms / max_ms;
    const char *colour = r->mode == TG_MODE_OBJECTS ? "#1f77b4" : "#d62728";
    tg__strbuf_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", x, y0, x, y1, colour);
    tg__strbuf_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"><title>%s %s: %llu bytes, %.3f ms "
                          "(%.3f-%.3f)</title></circle>\n",
                      x, y, colour, tg_storage_name(r->storage), tg_mode_name(r->mode),
                      (unsigned long long)r->result->bytes, r->speed.median_ms, r->speed.min_ms, r->speed.max_ms);
    tg__strbuf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\">%s %s</text>\n", x + 7, y - 5, tg_storage_name(r->storage),
                      tg_mode_name(r->mode));
  }
  tg__strbuf_printf(&b, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#1f77b4\">objects mode</text>"
                        "<text x=\"%.0f\" y=\"%.0f\" fill=\"#d62728\">offsets mode</text>\n</svg>\n",
                    W - 220, T, W - 120, T);
  int ok = 0;
  if (b.failed) {
    tg_cli_error("evaluate: out of memory drawing the speed chart");
  } else {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.speed.svg", dir, stem);
    ok = tg_cli_write_file(path, b.data, b.length);
  }
  tg__strbuf_free(&b);
  return ok;
}
