/* Heterogeneous graphs in the CLI: `--place` / `--place-file` on plan, evaluate, schedule and
 * run. One pipeline for all four: load the model, place its ops, split the planned tensors
 * into device, host and shared memory, plan every record set on its own, compute the waits
 * between processors and the partition-by-partition baseline; then each command reports (and
 * `run` realises and checks) what it is about. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "tangram/backend.h"
#include "tangram/hetero.h"
#include "tangram/placement.h"
#include "tangram/report.h"
#include "tools/input.h"
#include "tools/place_cli.h"

int tg_cli_place_option(int argc, char **argv, int *i, tg_cli_place_request *req) {
  const char *v;
  int m = tg_cli_option(argc, argv, i, "--place-file", &v);
  if (m > 0) req->place_file = v;
  if (m != 0) return m;
  m = tg_cli_option(argc, argv, i, "--place", &v);
  if (m > 0) req->place = v;
  return m;
}

int tg_cli_place_given(const tg_cli_place_request *req) {
  return req->place != NULL || req->place_file != NULL;
}

static const char *const k_set_names[TG_SET_COUNT] = {"device", "device-fallback", "host", "shared"};

/* Everything the pipeline builds for one storage, mode and strategy. */
typedef struct hetero {
  tg_cli_input in;
  tg_processor *processor_of;
  size_t cpu_ops;
  tg_spaces *spaces;
  tg_record_set *arena[TG_SET_COUNT];     /* run, offsets mode: the device's real sizes */
  tg_tensor_resource *resources[TG_SET_COUNT];
  tg_space_options options[TG_SET_COUNT];
  tg_spaces_plan p;                       /* every set's plan, the totals, the waits */
  tg_partition_baseline baseline;
  uint64_t plan_us;
  const char *note;                       /* e.g. textures fell back to objects mode */
  const tg_allocator *alloc;
} hetero;

static void hetero_free(hetero *h) {
  tg_spaces_plan_free(&h->p);
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    tg_record_set_destroy(h->arena[k]);
    tg__free(h->alloc, h->resources[k]);
  }
  tg_spaces_destroy(h->spaces);
  tg__free(h->alloc, h->processor_of);
  tg_cli_input_free(&h->in);
  memset(h, 0, sizeof *h);
}

/* Load the model and place its ops. Exit code on failure (message printed), -1 on success. */
static int load_placed(const tg_cli_place_request *req, const char *cmd, tg_storage storage,
                       const tg_device_limits *limits, const tg_allocator *alloc, hetero *h) {
  memset(h, 0, sizeof *h);
  h->alloc = alloc;
  tg_error_info err = {{0}};
  tg_cli_input_options io = {storage, req->precision, req->plan_io, limits, req->model_options, 0, 0};
  tg_status st = tg_cli_input_load(req->model, &io, alloc, &h->in, &err);
  if (st != TG_OK) {
    tg_cli_error("%s", err.message[0] ? err.message : tg_status_string(st));
    return tg_cli_exit_code(st);
  }
  if (h->in.graph == NULL) {
    tg_cli_error("%s: --place needs a model's graph; %s holds usage records", cmd, req->model);
    hetero_free(h);
    return TG_EXIT_USAGE;
  }
  const tg_graph *g = h->in.graph;
  h->processor_of = tg__calloc(alloc, g->op_count ? g->op_count : 1, sizeof *h->processor_of);
  if (h->processor_of == NULL) {
    tg_cli_error("%s: out of host memory", cmd);
    hetero_free(h);
    return TG_EXIT_FAILURE;
  }
  st = tg_placement_apply_spec(g, req->place ? req->place : "gpu", h->processor_of, &err);
  if (st == TG_OK && req->place_file)
    st = tg_placement_read_file(g, req->place_file, alloc, h->processor_of, &err);
  if (st != TG_OK) {
    tg_cli_error("%s: %s", cmd, err.message);
    hetero_free(h);
    return tg_cli_exit_code(st);
  }
  for (size_t i = 0; i < g->op_count; ++i) h->cpu_ops += h->processor_of[i] == TG_PROCESSOR_CPU;
  st = tg_spaces_create(g, h->in.lifetimes, h->in.model_records, h->processor_of, alloc, &h->spaces, &err);
  if (st != TG_OK) {
    tg_cli_error("%s: %s", cmd, err.message);
    hetero_free(h);
    return tg_cli_exit_code(st);
  }
  return -1;
}

/* Plan every set with `mode` and `strategy` (and `dev` for the device's real sizes in offsets
 * mode), then the waits and the baseline. */
static tg_status plan_all(const tg_cli_place_request *req, tg_device *dev, tg_mode mode,
                          tg_strategy strategy, uint64_t budget, int gpu_in_order, hetero *h,
                          tg_error_info *err) {
  const tg_spaces *sp = h->spaces;
  const tg_allocator *alloc = h->alloc;
  const tg_device_info *info = dev ? tg_device_get_info(dev) : NULL;
  uint64_t t0 = tg__now_us();
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    const tg_space_set *ss = &sp->sets[k];
    tg_space_options *o = &h->options[k];
    memset(o, 0, sizeof *o);
    o->plan.mode = mode;
    o->plan.strategy = strategy;
    o->plan.time_limit_ms = req->time_limit_ms;
    o->plan.seed = req->seed;
    o->plan.alignment = req->alignment;
    o->plan.fit = req->fit;
    o->plan.max_allocation = req->max_allocation;
    o->policy = req->policy;
    if (ss->space != TG_SPACE_HOST) o->budget = budget;
    tg_status st = tg_cli_resources(ss->records, ss->storage, sp->precision, alloc, &h->resources[k]);
    if (st != TG_OK) return tg__error(err, st, "resources: %s", tg_status_string(st));
    if (ss->records->count == 0) continue;
    if (mode == TG_MODE_OFFSETS && ss->records->dims != 1) {
      if (dev == NULL)
        return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                         "offsets mode needs 1D records (%s gives texture extents)",
                         tg_storage_name(ss->storage));
      if (!info->arena_images) {
        o->plan.mode = TG_MODE_OBJECTS;
        h->note = "this device cannot place images in an arena: textures use objects mode";
      }
    }
    if (dev && o->plan.mode == TG_MODE_OFFSETS && ss->space != TG_SPACE_HOST) {
      st = tg_device_compute_arena_records(dev, h->resources[k], ss->records->records,
                                           ss->records->count, sp->precision, alloc, &h->arena[k]);
      if (st != TG_OK)
        return tg__error(err, st, "%s records for an arena: %s", k_set_names[k], tg_status_string(st));
    }
  }
  /* Budgets hold per space: the device set and its fallback buffers together. */
  const tg_record_set *planned[TG_SET_COUNT] = {h->arena[0], h->arena[1], h->arena[2], h->arena[3]};
  tg_status st = tg_spaces_plan_all(sp, h->in.schedule, h->options, planned, budget, gpu_in_order, alloc, &h->p, err);
  if (st != TG_OK) return st;
  st = tg_spaces_partition_baseline(sp, h->in.model_records, &h->options[TG_SET_DEVICE],
                                    &h->options[TG_SET_HOST], alloc, &h->baseline, err);
  h->plan_us = tg__now_us() - t0;
  return st;
}

/* ---- reports ---- */

static double gap_pct(uint64_t bytes, uint64_t lower) {
  return lower ? 100.0 * ((double)bytes / (double)lower - 1.0) : 0.0;
}

static int64_t saved_bytes(const hetero *h) {
  return (int64_t)h->baseline.total_bytes - (int64_t)h->p.total_bytes;
}

static void json_placement(tg__strbuf *b, const tg_cli_place_request *req, const hetero *h) {
  tg__strbuf_puts(b, ",\"place\":");
  tg__strbuf_json_string(b, req->place ? req->place : (req->place_file ? NULL : "gpu"));
  tg__strbuf_puts(b, ",\"place_file\":");
  tg__strbuf_json_string(b, req->place_file);
  tg__strbuf_printf(b, ",\"cpu_ops\":%zu,\"placement_of\":[", h->cpu_ops);
  for (size_t i = 0; i < h->spaces->op_count; ++i)
    tg__strbuf_printf(b, "%s\"%s\"", i ? "," : "", tg_processor_name(h->processor_of[i]));
  tg__strbuf_puts(b, "]");
}

/* "spaces", zero-copy tensors, copies avoided, the baseline and the waits. `stats` (run) gives
 * the allocations made; otherwise those the plans would make. */
static void json_spaces(tg__strbuf *b, const hetero *h, const tg_hetero_stats *stats) {
  const tg_spaces *sp = h->spaces;
  tg__strbuf_puts(b, ",\"spaces\":[");
  for (int s = 0; s < TG_SPACE_COUNT; ++s) {
    size_t records = tg_spaces_count(sp, (tg_space)s), objects = 0;
    for (int k = 0; k < TG_SET_COUNT; ++k)
      if (sp->sets[k].space == (tg_space)s && h->p.sets[k].plan)
        objects += h->p.sets[k].plan->mode == TG_MODE_OBJECTS ? h->p.sets[k].plan->object_count : 0;
    tg__strbuf_printf(b, "%s{\"space\":\"%s\",\"records\":%zu,\"total\":%llu,\"lower_bound\":%llu,"
                         "\"allocations\":%llu,\"objects\":%zu,\"gap_percent\":%.2f",
                      s ? "," : "", tg_space_name((tg_space)s), records,
                      (unsigned long long)h->p.bytes[s], (unsigned long long)h->p.lower_bound_bytes[s],
                      (unsigned long long)(stats ? stats->allocations[s] : h->p.allocations[s]), objects,
                      gap_pct(h->p.bytes[s], h->p.lower_bound_bytes[s]));
    if (stats)
      tg__strbuf_printf(b, ",\"allocated_bytes\":%llu", (unsigned long long)stats->allocated_bytes[s]);
    tg__strbuf_puts(b, ",\"sets\":[");
    int first = 1;
    for (int k = 0; k < TG_SET_COUNT; ++k) {
      const tg_space_set *ss = &sp->sets[k];
      if (ss->space != (tg_space)s || (k == TG_SET_DEVICE_FALLBACK && ss->records->count == 0)) continue;
      const tg_plan *p = h->p.sets[k].plan;
      tg__strbuf_printf(b, "%s{\"set\":\"%s\",\"storage\":\"%s\",\"records\":%zu,\"total\":%llu,"
                           "\"mode\":\"%s\",\"winner\":",
                        first ? "" : ",", k_set_names[k], tg_storage_name(ss->storage),
                        ss->records->count, (unsigned long long)h->p.sets[k].bytes,
                        tg_mode_name(h->options[k].plan.mode));
      if (p) tg__strbuf_printf(b, "\"%s\"", tg_strategy_name(p->strategy));
      else tg__strbuf_puts(b, "null");
      tg__strbuf_puts(b, "}");
      first = 0;
    }
    tg__strbuf_puts(b, "]}");
  }
  const tg_space_set *shared = &sp->sets[TG_SET_SHARED];
  tg__strbuf_puts(b, "],\"zero_copy_tensors\":[");
  for (size_t r = 0; r < shared->records->count; ++r) {
    if (r) tg__strbuf_puts(b, ",");
    tg__strbuf_json_string(b, shared->records->names[r]);
  }
  tg__strbuf_printf(b, "],\"images_as_buffers\":%zu", sp->images_as_buffers);
  if (sp->images_as_buffers)
    tg__strbuf_puts(b, ",\"images_as_buffers_reason\":\"an image cannot be mapped by the CPU without "
                       "a copy: shared tensors use buffers\"");
  const tg_partition_baseline *bl = &h->baseline;
  tg__strbuf_printf(b, ",\"copies_avoided\":%llu,\"copies_avoided_bytes\":%llu,\"total\":%llu,"
                       "\"lower_bound\":%llu,\"baseline\":{\"gpu_bytes\":%llu,\"cpu_bytes\":%llu,"
                       "\"total\":%llu,\"copies\":%llu,\"copy_bytes\":%llu},\"bytes_saved\":%lld,"
                       "\"saved_percent\":%.2f",
                    (unsigned long long)bl->copies, (unsigned long long)bl->copy_bytes,
                    (unsigned long long)h->p.total_bytes, (unsigned long long)h->p.total_lower_bound_bytes,
                    (unsigned long long)bl->gpu_bytes, (unsigned long long)bl->cpu_bytes,
                    (unsigned long long)bl->total_bytes, (unsigned long long)bl->copies,
                    (unsigned long long)bl->copy_bytes, (long long)saved_bytes(h),
                    bl->total_bytes ? 100.0 * (double)saved_bytes(h) / (double)bl->total_bytes : 0.0);
  const tg_spaces_waits *w = h->p.waits;
  const tg_graph *g = h->in.graph;
  tg__strbuf_printf(b, ",\"waits_added\":%zu,\"cross_data_edges\":%zu,\"reuse_edges\":%zu,\"cross_waits\":[",
                    w->cross_count, w->cross_data_edges, w->reuse_edge_count);
  for (size_t e = 0; e < w->cross_count; ++e) {
    const tg_cross_wait *c = &w->cross[e];
    tg__strbuf_printf(b, "%s{\"op\":%u,\"after\":%u,\"from\":\"%s\",\"to\":\"%s\",\"kind\":\"%s\",\"tensor\":",
                      e ? "," : "", c->op, c->after, tg_processor_name(h->processor_of[c->after]),
                      tg_processor_name(h->processor_of[c->op]), c->reuse ? "reuse" : "data");
    tg__strbuf_json_string(b, c->tensor < g->tensor_count ? g->tensors[c->tensor].name : NULL);
    tg__strbuf_puts(b, "}");
  }
  tg__strbuf_puts(b, "]");
}

/* Per record, in record order (every planned tensor, producer op order): who writes it, who reads
 * it, where it lives and its bytes there. */
static void json_records(tg__strbuf *b, const hetero *h) {
  const tg_spaces *sp = h->spaces;
  const tg_lifetimes *lt = h->in.lifetimes;
  const tg_graph *g = h->in.graph;
  size_t n = sp->record_count;
  tg__strbuf_printf(b, ",\"records\":%zu,\"names\":[", n);
  for (size_t r = 0; r < n; ++r) {
    if (r) tg__strbuf_puts(b, ",");
    tg__strbuf_json_string(b, g->tensors[sp->tensor_of[r]].name);
  }
  tg__strbuf_puts(b, "],\"tensor_of\":[");
  for (size_t r = 0; r < n; ++r) tg__strbuf_printf(b, "%s%u", r ? "," : "", sp->tensor_of[r]);
  tg__strbuf_puts(b, "],\"space_of\":[");
  for (size_t r = 0; r < n; ++r)
    tg__strbuf_printf(b, "%s\"%s\"", r ? "," : "", tg_space_name(sp->space_of_tensor[sp->tensor_of[r]]));
  tg__strbuf_puts(b, "],\"producer_of\":[");
  for (size_t r = 0; r < n; ++r)
    tg__strbuf_printf(b, "%s%d", r ? "," : "", lt->tensors[sp->tensor_of[r]].producer);
  tg__strbuf_puts(b, "],\"consumers_of\":[");
  for (size_t r = 0; r < n; ++r) {
    const tg_tensor_lifetime *t = &lt->tensors[sp->tensor_of[r]];
    tg__strbuf_puts(b, r ? ",[" : "[");
    for (uint32_t c = 0; c < t->consumer_count; ++c) tg__strbuf_printf(b, "%s%u", c ? "," : "", t->consumers[c]);
    tg__strbuf_puts(b, "]");
  }
  tg__strbuf_puts(b, "],\"size_of\":[");
  for (size_t r = 0; r < n; ++r) {
    const tg_space_set *ss = &sp->sets[sp->set_of[r]];
    uint64_t v = 0;
    (void)tg_extent_volume(ss->records->records[sp->index_in_set[r]].size, &v);
    if (ss->records->dims > 1) v *= tg_precision_texel_bytes(sp->precision);
    tg__strbuf_printf(b, "%s%llu", r ? "," : "", (unsigned long long)v);
  }
  tg__strbuf_puts(b, "]");
}

/* Each set's plan: its tensors in set order and where they went. */
static void json_plans(tg__strbuf *b, const hetero *h) {
  const tg_spaces *sp = h->spaces;
  tg__strbuf_puts(b, ",\"plans\":[");
  int first = 1;
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    const tg_space_set *ss = &sp->sets[k];
    const tg_plan *p = h->p.sets[k].plan;
    if (p == NULL) continue;
    tg__strbuf_printf(b, "%s{\"set\":\"%s\",\"space\":\"%s\",\"storage\":\"%s\",\"mode\":\"%s\","
                         "\"winner\":\"%s\",\"total\":%llu,\"objects\":%zu,\"tensor_of\":[",
                      first ? "" : ",", k_set_names[k], tg_space_name(ss->space),
                      tg_storage_name(ss->storage), tg_mode_name(p->mode), tg_strategy_name(p->strategy),
                      (unsigned long long)p->total, p->object_count);
    first = 0;
    for (size_t r = 0; r < ss->records->count; ++r) tg__strbuf_printf(b, "%s%u", r ? "," : "", ss->tensor_of[r]);
    if (p->mode == TG_MODE_OBJECTS) {
      tg__strbuf_puts(b, "],\"object_of\":[");
      for (size_t r = 0; r < p->record_count; ++r) tg__strbuf_printf(b, "%s%u", r ? "," : "", p->object_of[r]);
      tg__strbuf_puts(b, "]");
    } else {
      tg__strbuf_puts(b, "],\"offset_of\":[");
      for (size_t r = 0; r < p->record_count; ++r)
        tg__strbuf_printf(b, "%s%llu", r ? "," : "", (unsigned long long)p->offset_of[r]);
      tg__strbuf_puts(b, "]");
      tg_cli_json_arenas(b, p, 1);
    }
    tg__strbuf_puts(b, "}");
  }
  tg__strbuf_puts(b, "]");
}

static void text_spaces(tg__strbuf *b, const hetero *h, const tg_hetero_stats *stats) {
  const tg_spaces *sp = h->spaces;
  char h1[32], h2[32];
  tg__strbuf_printf(b, "\n%-8s %8s %8s %14s %12s %14s %8s %12s\n", "space", "records", "objects",
                    "bytes", "", "lower bound", "gap", "allocations");
  for (int s = 0; s < TG_SPACE_COUNT; ++s) {
    size_t objects = 0;
    for (int k = 0; k < TG_SET_COUNT; ++k)
      if (sp->sets[k].space == (tg_space)s && h->p.sets[k].plan && h->p.sets[k].plan->mode == TG_MODE_OBJECTS)
        objects += h->p.sets[k].plan->object_count;
    tg__strbuf_printf(b, "%-8s %8zu %8zu %14llu %12s %14llu %7.2f%% %12llu\n", tg_space_name((tg_space)s),
                      tg_spaces_count(sp, (tg_space)s), objects, (unsigned long long)h->p.bytes[s],
                      tg_report_format_bytes(h->p.bytes[s], h1, sizeof h1), (unsigned long long)h->p.lower_bound_bytes[s],
                      gap_pct(h->p.bytes[s], h->p.lower_bound_bytes[s]),
                      (unsigned long long)(stats ? stats->allocations[s] : h->p.allocations[s]));
  }
  tg__strbuf_printf(b, "%-8s %8zu %8s %14llu %12s %14llu %7.2f%%\n", "total", sp->record_count, "",
                    (unsigned long long)h->p.total_bytes, tg_report_format_bytes(h->p.total_bytes, h2, sizeof h2),
                    (unsigned long long)h->p.total_lower_bound_bytes, gap_pct(h->p.total_bytes, h->p.total_lower_bound_bytes));
  if (sp->sets[TG_SET_DEVICE_FALLBACK].records->count)
    tg__strbuf_printf(b, "  (device: %zu tensors do not fit %s and are buffers)\n",
                      sp->sets[TG_SET_DEVICE_FALLBACK].records->count, tg_storage_name(sp->storage));
  const tg_space_set *shared = &sp->sets[TG_SET_SHARED];
  tg__strbuf_printf(b, "\nzero-copy tensors (shared memory): %zu", shared->records->count);
  for (size_t r = 0; r < shared->records->count && r < 3; ++r) {
    const char *nm = shared->records->names[r] ? shared->records->names[r] : "?";
    size_t len = strlen(nm);
    tg__strbuf_printf(b, "%s%s%.*s", r ? ", " : ": ", len > 40 ? "..." : "", 40, len > 40 ? nm + len - 40 : nm);
  }
  tg__strbuf_puts(b, shared->records->count > 3 ? ", ... (--json lists all)\n" : "\n");
  if (sp->images_as_buffers)
    tg__strbuf_printf(b, "  %zu of them are buffers, not %s images: an image cannot be mapped by the CPU "
                         "without a copy\n",
                      sp->images_as_buffers, tg_storage_name(sp->storage));
  tg__strbuf_printf(b, "waits between processors: %zu (%zu graph edges cross processors)\n",
                    h->p.waits->cross_count, h->p.waits->cross_data_edges);
  const tg_partition_baseline *bl = &h->baseline;
  char a1[32], a2[32], a3[32], a4[32], a5[32];
  tg__strbuf_printf(b, "partition by partition: gpu %s + cpu %s = %s, %llu copies of %s per run\n",
                    tg_report_format_bytes(bl->gpu_bytes, a1, sizeof a1),
                    tg_report_format_bytes(bl->cpu_bytes, a2, sizeof a2),
                    tg_report_format_bytes(bl->total_bytes, a3, sizeof a3), (unsigned long long)bl->copies,
                    tg_report_format_bytes(bl->copy_bytes, a4, sizeof a4));
  int64_t saved = saved_bytes(h);
  uint64_t mag = saved >= 0 ? (uint64_t)saved : (uint64_t)(-saved);
  tg__strbuf_printf(b, "heterogeneous plan: %s, %s %s (%.2f%%); %llu copies (%s per run) avoided\n",
                    tg_report_format_bytes(h->p.total_bytes, a5, sizeof a5),
                    tg_report_format_bytes(mag, a2, sizeof a2), saved >= 0 ? "less" : "more",
                    bl->total_bytes ? 100.0 * (double)mag / (double)bl->total_bytes : 0.0,
                    (unsigned long long)bl->copies, tg_report_format_bytes(bl->copy_bytes, a1, sizeof a1));
  if (h->note) tg__strbuf_printf(b, "note: %s\n", h->note);
}

static void text_header(tg__strbuf *b, const char *cmd, const tg_cli_place_request *req, const hetero *h) {
  tg__strbuf_printf(b, "%s: %s, placement %s%s%s: %zu ops on the gpu, %zu on the cpu\n", cmd, req->model,
                    req->place ? req->place : "gpu", req->place_file ? " + " : "",
                    req->place_file ? req->place_file : "", h->spaces->op_count - h->cpu_ops, h->cpu_ops);
}

static int emit(tg__strbuf *b, int code) {
  if (b->failed) {
    tg_cli_error("out of host memory");
    code = TG_EXIT_FAILURE;
  } else if (fwrite(b->data, 1, b->length, stdout) != b->length) {
    code = TG_EXIT_FAILURE;
  }
  tg__strbuf_free(b);
  return code;
}

static int check_strategy(const char *cmd, tg_mode mode, tg_strategy strategy) {
  if (mode == TG_MODE_OFFSETS && (strategy == TG_STRATEGY_EQUALITY || strategy == TG_STRATEGY_MIN_COST_FLOW)) {
    tg_cli_error("%s: strategy %s exists only in objects mode", cmd, tg_strategy_name(strategy));
    return 0;
  }
  return 1;
}

/* ---- plan ---- */

int tg_cli_place_plan(const tg_cli_place_request *req) {
  if (!check_strategy("plan", req->mode, req->strategy)) return TG_EXIT_USAGE;
  tg_failing_allocator fa;
  const tg_allocator *alloc = tg_cli_allocator(&fa);
  hetero h;
  int code = load_placed(req, "plan", req->storage, NULL, alloc, &h);
  if (code >= 0) return code;
  tg_error_info err = {{0}};
  tg_status st = plan_all(req, NULL, req->mode, req->strategy, 0, req->policy == TG_POLICY_SERIAL, &h, &err);
  if (st != TG_OK) {
    tg_cli_error("plan: %s", err.message[0] ? err.message : tg_status_string(st));
    hetero_free(&h);
    return st == TG_ERROR_INVALID_PLAN ? TG_EXIT_FAILURE : tg_cli_exit_code(st);
  }
  tg__strbuf b;
  tg__strbuf_init(&b, alloc);
  if (req->json) {
    tg__strbuf_puts(&b, "{\"input\":");
    tg__strbuf_json_string(&b, req->model);
    tg__strbuf_printf(&b, ",\"storage\":\"%s\",\"precision\":\"%s\",\"mode\":\"%s\",\"strategy\":\"%s\","
                          "\"policy\":\"%s\",\"tensors\":%zu,\"ops\":%zu,\"valid\":true,\"plan_us\":%llu",
                      tg_storage_name(req->storage), tg_precision_name(req->precision), tg_mode_name(req->mode),
                      tg_strategy_name(req->strategy), tg_policy_name(req->policy), h.in.graph->tensor_count,
                      h.in.graph->op_count, (unsigned long long)h.plan_us);
    json_placement(&b, req, &h);
    json_spaces(&b, &h, NULL);
    json_records(&b, &h);
    json_plans(&b, &h);
    tg__strbuf_puts(&b, "}\n");
  } else {
    text_header(&b, "plan", req, &h);
    tg__strbuf_printf(&b, "storage %s %s, mode %s, strategy %s, policy %s; every plan valid\n",
                      tg_storage_name(req->storage), tg_precision_name(req->precision), tg_mode_name(req->mode),
                      tg_strategy_name(req->strategy), tg_policy_name(req->policy));
    text_spaces(&b, &h, NULL);
  }
  hetero_free(&h);
  return emit(&b, TG_EXIT_OK);
}

/* ---- schedule ---- */

int tg_cli_place_schedule(const tg_cli_place_request *req) {
  if (!check_strategy("schedule", req->mode, req->strategy)) return TG_EXIT_USAGE;
  tg_failing_allocator fa;
  const tg_allocator *alloc = tg_cli_allocator(&fa);
  hetero h;
  int code = load_placed(req, "schedule", req->storage, NULL, alloc, &h);
  if (code >= 0) return code;
  tg_error_info err = {{0}};
  /* What a parallel runtime needs: the GPU runs its ops out of order. */
  tg_status st = plan_all(req, NULL, req->mode, req->strategy, 0, 0, &h, &err);
  if (st != TG_OK) {
    tg_cli_error("schedule: %s", err.message[0] ? err.message : tg_status_string(st));
    hetero_free(&h);
    return st == TG_ERROR_INVALID_PLAN ? TG_EXIT_FAILURE : tg_cli_exit_code(st);
  }
  const tg_graph *g = h.in.graph;
  tg__strbuf b;
  tg__strbuf_init(&b, alloc);
  if (req->json) {
    char *json = NULL;
    size_t len = 0;
    st = tg_schedule_build_json(h.in.schedule, g, NULL, alloc, &json, &len);
    if (st != TG_OK) {
      tg_cli_error("schedule: %s", tg_status_string(st));
      hetero_free(&h);
      tg__strbuf_free(&b);
      return TG_EXIT_FAILURE;
    }
    tg__strbuf_append(&b, json, len - 1);
    tg_schedule_free_json(alloc, json);
    tg__strbuf_puts(&b, ",\"model\":");
    tg__strbuf_json_string(&b, req->model);
    tg__strbuf_printf(&b, ",\"policy\":\"%s\",\"strategy\":\"%s\",\"mode\":\"%s\",\"storage\":\"%s\","
                          "\"precision\":\"%s\"",
                      tg_policy_name(req->policy), tg_strategy_name(req->strategy), tg_mode_name(req->mode),
                      tg_storage_name(req->storage), tg_precision_name(req->precision));
    json_placement(&b, req, &h);
    json_spaces(&b, &h, NULL);
    json_records(&b, &h);
    tg__strbuf_puts(&b, "}\n");
  } else {
    tg_schedule_stats ss;
    tg_schedule_get_stats(h.in.schedule, &ss);
    text_header(&b, "schedule", req, &h);
    tg__strbuf_printf(&b, "%zu ops (%zu folded), %zu waves, %zu branches; plans: %s %s, %s, policy %s; "
                          "the GPU runs out of order\n",
                      ss.op_count, ss.folded_count, ss.wave_count, ss.branch_count, tg_storage_name(req->storage),
                      tg_mode_name(req->mode), tg_strategy_name(req->strategy), tg_policy_name(req->policy));
    text_spaces(&b, &h, NULL);
    const tg_spaces_waits *w = h.p.waits;
    tg__strbuf_printf(&b, "reuse edges (all spaces): %zu\n", w->reuse_edge_count);
    if (w->cross_count)
      tg__strbuf_puts(&b, "\nwaits between processors (OP waits for AFTER on the other processor):\n");
    for (size_t e = 0; e < w->cross_count; ++e) {
      const tg_cross_wait *c = &w->cross[e];
      tg__strbuf_printf(&b, "  op %u (%s, %s) after op %u (%s, %s): %s ", c->op, g->ops[c->op].name,
                        tg_processor_name(h.processor_of[c->op]), c->after, g->ops[c->after].name,
                        tg_processor_name(h.processor_of[c->after]), c->reuse ? "reuses memory of" : "reads");
      tg__strbuf_json_string(&b, c->tensor < g->tensor_count ? g->tensors[c->tensor].name : NULL);
      tg__strbuf_puts(&b, "\n");
    }
  }
  hetero_free(&h);
  return emit(&b, TG_EXIT_OK);
}

/* ---- evaluate ---- */

static const tg_storage k_storages[] = {TG_STORAGE_BUFFER, TG_STORAGE_IMAGE_BUFFER, TG_STORAGE_TEXTURE_2D,
                                        TG_STORAGE_TEXTURE_ARRAY, TG_STORAGE_TEXTURE_3D,
                                        TG_STORAGE_SINGLE_TEXTURE_2D};
#define STORAGE_COUNT (sizeof k_storages / sizeof k_storages[0])

typedef struct eval_row {
  tg_storage storage;
  tg_mode mode;
  int ok;
  char why[TG_ERROR_MESSAGE_MAX];
  uint64_t bytes[TG_SPACE_COUNT], total, lower, baseline, copies, copy_bytes;
  size_t zero_copy, waits;
  int64_t saved;
} eval_row;

int tg_cli_place_evaluate(const tg_cli_place_request *req) {
  tg_failing_allocator fa;
  const tg_allocator *alloc = tg_cli_allocator(&fa);
  tg_device_limits none;
  memset(&none, 0, sizeof none);
  eval_row rows[STORAGE_COUNT * 2];
  size_t nrows = 0, best = SIZE_MAX;
  hetero keep;
  memset(&keep, 0, sizeof keep);
  int have_keep = 0;
  tg_cli_place_request r = *req;
  r.strategy = TG_STRATEGY_BEST;
  for (size_t si = 0; si < STORAGE_COUNT; ++si) {
    for (int m = 0; m < 2; ++m) {
      eval_row *row = &rows[nrows++];
      memset(row, 0, sizeof *row);
      row->storage = k_storages[si];
      row->mode = (tg_mode)m;
      if (m == TG_MODE_OFFSETS && tg_storage_dims(row->storage) != 1) {
        snprintf(row->why, sizeof row->why, "textures are planned as objects here");
        continue;
      }
      hetero h;
      int code = load_placed(req, "evaluate", row->storage, req->no_limits ? &none : NULL, alloc, &h);
      if (code >= 0) {
        if (have_keep) hetero_free(&keep);
        return code;
      }
      tg_error_info err = {{0}};
      tg_status st = plan_all(&r, NULL, row->mode, TG_STRATEGY_BEST, 0, req->policy == TG_POLICY_SERIAL, &h, &err);
      if (st != TG_OK) {
        snprintf(row->why, sizeof row->why, "%s", err.message[0] ? err.message : tg_status_string(st));
        hetero_free(&h);
        if (st == TG_ERROR_OUT_OF_HOST_MEMORY || st == TG_ERROR_INVALID_PLAN) {
          tg_cli_error("evaluate: %s %s: %s", tg_storage_name(row->storage), tg_mode_name(row->mode), row->why);
          if (have_keep) hetero_free(&keep);
          return TG_EXIT_FAILURE;
        }
        continue;
      }
      row->ok = 1;
      memcpy(row->bytes, h.p.bytes, sizeof row->bytes);
      row->total = h.p.total_bytes;
      row->lower = h.p.total_lower_bound_bytes;
      row->baseline = h.baseline.total_bytes;
      row->copies = h.baseline.copies;
      row->copy_bytes = h.baseline.copy_bytes;
      row->zero_copy = h.spaces->sets[TG_SET_SHARED].records->count;
      row->waits = h.p.waits->cross_count;
      row->saved = saved_bytes(&h);
      if (best == SIZE_MAX || row->total < rows[best].total) {
        best = nrows - 1;
        if (have_keep) hetero_free(&keep);
        keep = h;
        have_keep = 1;
      } else {
        hetero_free(&h);
      }
    }
  }
  if (!have_keep) {
    tg_cli_error("evaluate: no storage could be planned: %s", rows[0].why);
    return TG_EXIT_FAILURE;
  }
  tg__strbuf b;
  tg__strbuf_init(&b, alloc);
  if (req->json) {
    tg__strbuf_puts(&b, "{\"model\":");
    tg__strbuf_json_string(&b, req->model);
    tg__strbuf_printf(&b, ",\"precision\":\"%s\",\"policy\":\"%s\",\"limits\":\"%s\",\"strategy\":\"best\"",
                      tg_precision_name(req->precision), tg_policy_name(req->policy),
                      req->no_limits ? "none" : "default");
    json_placement(&b, req, &keep);
    tg__strbuf_puts(&b, ",\"results\":[");
    int first = 1;
    for (size_t i = 0; i < nrows; ++i) {
      const eval_row *row = &rows[i];
      tg__strbuf_printf(&b, "%s{\"storage\":\"%s\",\"mode\":\"%s\"", first ? "" : ",",
                        tg_storage_name(row->storage), tg_mode_name(row->mode));
      first = 0;
      if (!row->ok) {
        tg__strbuf_puts(&b, ",\"skipped\":");
        tg__strbuf_json_string(&b, row->why);
        tg__strbuf_puts(&b, "}");
        continue;
      }
      tg__strbuf_printf(&b, ",\"device\":%llu,\"host\":%llu,\"shared\":%llu,\"total\":%llu,\"lower_bound\":%llu,"
                            "\"baseline_total\":%llu,\"bytes_saved\":%lld,\"zero_copy_count\":%zu,"
                            "\"copies_avoided\":%llu,\"copies_avoided_bytes\":%llu,\"waits_added\":%zu}",
                        (unsigned long long)row->bytes[0], (unsigned long long)row->bytes[1],
                        (unsigned long long)row->bytes[2], (unsigned long long)row->total,
                        (unsigned long long)row->lower, (unsigned long long)row->baseline, (long long)row->saved,
                        row->zero_copy, (unsigned long long)row->copies, (unsigned long long)row->copy_bytes,
                        row->waits);
    }
    tg__strbuf_printf(&b, "],\"recommended\":{\"storage\":\"%s\",\"mode\":\"%s\"}",
                      tg_storage_name(rows[best].storage), tg_mode_name(rows[best].mode));
    json_spaces(&b, &keep, NULL);
    json_records(&b, &keep);
    tg__strbuf_puts(&b, "}\n");
  } else {
    text_header(&b, "evaluate", req, &keep);
    tg__strbuf_printf(&b, "strategy best per space, policy %s, %s; bytes per space, then the "
                          "partition-by-partition baseline\n\n",
                      tg_policy_name(req->policy), tg_precision_name(req->precision));
    tg__strbuf_printf(&b, "%-18s %-8s %12s %10s %10s %12s %12s %12s %6s %6s\n", "storage", "mode", "device",
                      "host", "shared", "total", "baseline", "saved", "0-copy", "waits");
    for (size_t i = 0; i < nrows; ++i) {
      const eval_row *row = &rows[i];
      if (!row->ok) {
        tg__strbuf_printf(&b, "%-18s %-8s skipped: %s\n", tg_storage_name(row->storage), tg_mode_name(row->mode),
                          row->why);
        continue;
      }
      tg__strbuf_printf(&b, "%-18s %-8s %12llu %10llu %10llu %12llu %12llu %12lld %6zu %6zu%s\n",
                        tg_storage_name(row->storage), tg_mode_name(row->mode), (unsigned long long)row->bytes[0],
                        (unsigned long long)row->bytes[1], (unsigned long long)row->bytes[2],
                        (unsigned long long)row->total, (unsigned long long)row->baseline, (long long)row->saved,
                        row->zero_copy, row->waits, i == best ? "  <- least" : "");
    }
    tg__strbuf_printf(&b, "\nleast memory: %s %s\n", tg_storage_name(rows[best].storage), tg_mode_name(rows[best].mode));
    text_spaces(&b, &keep, NULL);
  }
  hetero_free(&keep);
  return emit(&b, TG_EXIT_OK);
}

/* ---- run ---- */

static const tg_storage k_auto_storages[] = {TG_STORAGE_BUFFER, TG_STORAGE_TEXTURE_2D,
                                             TG_STORAGE_TEXTURE_ARRAY, TG_STORAGE_TEXTURE_3D,
                                             TG_STORAGE_IMAGE_BUFFER, TG_STORAGE_SINGLE_TEXTURE_2D};

int tg_cli_place_run(const tg_cli_place_request *req) {
  tg_failing_allocator fa;
  const tg_allocator *alloc = tg_cli_allocator(&fa);
  tg_error_info err = {{0}};
  tg_device_options dopt;
  memset(&dopt, 0, sizeof dopt);
  if (tg_backend_from_name(req->backend ? req->backend : "auto", &dopt.backend) != TG_OK) {
    tg_cli_error("run: --backend must be auto, vulkan, opencl or host, not '%s'", req->backend);
    return TG_EXIT_USAGE;
  }
  dopt.device = req->device;
  tg_device *dev = NULL;
  tg_backend_skip skipped[TG_BACKEND_COUNT];
  size_t nskipped;
  int opened = tg_cli_open_device(&dopt, alloc, &dev, skipped, &nskipped, &err);
  if (opened != 0) return opened;
  tg_status st = TG_OK;
  const tg_device_info *info = tg_device_get_info(dev);
  uint64_t budget = req->budget ? req->budget : info->memory_budget;
  int gpu_in_order = !(req->out_of_order && info->out_of_order);

  /* The requested storage, or (auto) each the device can hold, keeping the least total; a
   * plan over budget tries the other strategies, then the other mode, as without --place. */
  hetero chosen;
  memset(&chosen, 0, sizeof chosen);
  int have = 0;
  char why_not[TG_ERROR_MESSAGE_MAX + 64] = "";
  size_t ncand = req->auto_storage ? sizeof k_auto_storages / sizeof k_auto_storages[0] : 1;
  for (size_t c = 0; c < ncand; ++c) {
    tg_storage s = req->auto_storage ? k_auto_storages[c] : req->storage;
    if (tg_storage_dims(s) > 1 && !info->images) {
      snprintf(why_not, sizeof why_not, "%s: the device has no image support", tg_storage_name(s));
      continue;
    }
    for (int attempt = 0; attempt < 2 * TG_STRATEGY_COUNT; ++attempt) {
      tg_mode m = attempt < TG_STRATEGY_COUNT ? req->mode
                                              : (req->mode == TG_MODE_OBJECTS ? TG_MODE_OFFSETS : TG_MODE_OBJECTS);
      tg_strategy sg = attempt == 0 ? req->strategy
                                    : (tg_strategy)((attempt - 1 + TG_STRATEGY_COUNT) % TG_STRATEGY_COUNT);
      if (attempt == TG_STRATEGY_COUNT) sg = req->strategy;
      if (attempt > 0 && attempt < TG_STRATEGY_COUNT && sg == req->strategy) continue;
      /* Strategies that do not plan this mode (or, objects mode, this storage's records). */
      if (!tg_strategy_applies(sg, m, m == TG_MODE_OBJECTS ? tg_storage_dims(s) : 1)) continue;
      hetero h;
      int code = load_placed(req, "run", s, &info->limits, alloc, &h);
      if (code >= 0) {
        if (have) hetero_free(&chosen);
        tg_device_close(dev);
        return code;
      }
      tg_error_info perr = {{0}};
      st = plan_all(req, dev, m, sg, budget, gpu_in_order, &h, &perr);
      if (st == TG_ERROR_BUDGET) {
        if (!have) snprintf(why_not, sizeof why_not, "%s %s %s: %s", tg_storage_name(s), tg_mode_name(m),
                            tg_strategy_name(sg), perr.message);
        hetero_free(&h);
        continue;
      }
      if (st != TG_OK) {
        hetero_free(&h);
        if (st == TG_ERROR_OUT_OF_HOST_MEMORY || st == TG_ERROR_INVALID_PLAN || !req->auto_storage) {
          tg_cli_error("run: %s", perr.message[0] ? perr.message : tg_status_string(st));
          if (have) hetero_free(&chosen);
          tg_device_close(dev);
          return st == TG_ERROR_INVALID_PLAN ? TG_EXIT_FAILURE : tg_cli_exit_code(st);
        }
        snprintf(why_not, sizeof why_not, "%s: %s", tg_storage_name(s), perr.message);
        break;
      }
      if (!have || h.p.total_bytes < chosen.p.total_bytes) {
        if (have) hetero_free(&chosen);
        chosen = h;
        have = 1;
      } else {
        hetero_free(&h);
      }
      break;
    }
  }
  if (!have) {
    tg_cli_error("run: nothing fits: %s (allocated nothing)", why_not[0] ? why_not : "no storage is usable");
    tg_device_close(dev);
    return TG_EXIT_FAILURE;
  }

  /* Realise every set and check both processors. */
  const tg_spaces *sp = chosen.spaces;
  tg_hetero_set_desc sets[TG_SET_COUNT];
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    const tg_space_set *ss = &sp->sets[k];
    const tg_record_set *planned = chosen.arena[k] ? chosen.arena[k] : ss->records;
    sets[k] = (tg_hetero_set_desc){ss->space, chosen.p.sets[k].plan, planned->records, planned->count,
                                   planned->dims, chosen.resources[k], ss->tensor_of};
  }
  tg_hetero_realize_desc rd = {sets, TG_SET_COUNT, sp->precision, 0};
  tg_hetero_realization *z = NULL;
  uint64_t t0 = tg__now_us();
  st = tg_hetero_realization_create(dev, &rd, alloc, &z, &err);
  uint64_t allocate_us = tg__now_us() - t0, check_us = 0;
  tg_check_result result = {0, NULL, 0};
  tg_hetero_stats stats;
  memset(&stats, 0, sizeof stats);
  uint64_t *mismatches = NULL;
  if (st == TG_OK) {
    tg_hetero_realization_get_stats(z, &stats);
    mismatches = tg__calloc(alloc, sp->record_count ? sp->record_count : 1, sizeof *mismatches);
    if (mismatches == NULL) st = tg__error(&err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  }
  if (st == TG_OK) {
    /* With --no-reuse-edges the waits are the graph's edges alone. */
    tg_hetero_check_desc cd = {chosen.in.graph, chosen.processor_of, req->out_of_order,
                               req->no_reuse_edges ? NULL : chosen.p.waits->wait_start,
                               req->no_reuse_edges ? NULL : chosen.p.waits->waits};
    result.mismatches = mismatches;
    t0 = tg__now_us();
    st = tg_hetero_realization_check(z, &cd, &result, &err);
    check_us = tg__now_us() - t0;
  }
  if (st == TG_OK) {
    size_t at = 0;
    for (int k = 0; k < TG_SET_COUNT; ++k)
      for (size_t r = 0; r < sp->sets[k].records->count; ++r, ++at)
        if (mismatches[at])
          tg_cli_error("corrupted: %s (%s memory, %llu mismatching words/texels)",
                       sp->sets[k].records->names[r] ? sp->sets[k].records->names[r] : "(unnamed)",
                       tg_space_name(sp->sets[k].space), (unsigned long long)mismatches[at]);
  }
  tg__free(alloc, mismatches);
  tg_hetero_realization_destroy(z);
  if (st != TG_OK) {
    tg_cli_error("run: %s", err.message[0] ? err.message : tg_status_string(st));
    int64_t native = tg_device_get_native_error(dev);
    if (native) tg_cli_error("run: the driver's last error code: %lld", (long long)native);
    hetero_free(&chosen);
    tg_device_close(dev);
    return st == TG_ERROR_INVALID_PLAN ? TG_EXIT_FAILURE
                                       : (tg_cli_exit_code(st) == TG_EXIT_USAGE ? TG_EXIT_USAGE : TG_EXIT_FAILURE);
  }
  uint64_t messages = tg_device_get_validation_messages(dev);
  tg__strbuf b;
  tg__strbuf_init(&b, alloc);
  tg_cli_place_request shown = *req;
  shown.storage = sp->storage;
  if (req->json) {
    tg__strbuf_puts(&b, "{\"model\":");
    tg__strbuf_json_string(&b, req->model);
    tg__strbuf_printf(&b, ",\"backend\":\"%s\",\"device\":", tg_backend_name(info->backend));
    tg__strbuf_json_string(&b, info->name);
    tg__strbuf_printf(&b, ",\"device_kind\":\"%s\",\"storage\":\"%s\",\"precision\":\"%s\",\"mode\":\"%s\","
                          "\"strategy\":\"%s\",\"policy\":\"%s\",\"budget_bytes\":%llu,\"out_of_order\":%s,"
                          "\"reuse_edges_left_out\":%s,\"allocations\":%llu,\"allocated_bytes\":%llu,"
                          "\"corrupted_tensors\":%llu,\"checked_bytes\":%llu,\"validation_messages\":%llu,"
                          "\"plan_us\":%llu,\"allocate_us\":%llu,\"check_us\":%llu",
                      info->kind, tg_storage_name(sp->storage), tg_precision_name(sp->precision),
                      tg_mode_name(chosen.options[TG_SET_DEVICE].plan.mode),
                      tg_strategy_name(chosen.options[TG_SET_DEVICE].plan.strategy), tg_policy_name(req->policy),
                      (unsigned long long)budget, req->out_of_order ? "true" : "false",
                      req->no_reuse_edges ? "true" : "false",
                      (unsigned long long)(stats.allocations[0] + stats.allocations[1] + stats.allocations[2]),
                      (unsigned long long)(stats.allocated_bytes[0] + stats.allocated_bytes[1] + stats.allocated_bytes[2]),
                      (unsigned long long)result.corrupted_records, (unsigned long long)result.checked_bytes,
                      (unsigned long long)messages, (unsigned long long)chosen.plan_us,
                      (unsigned long long)allocate_us, (unsigned long long)check_us);
    if (chosen.note) {
      tg__strbuf_puts(&b, ",\"note\":");
      tg__strbuf_json_string(&b, chosen.note);
    }
    json_placement(&b, req, &chosen);
    json_spaces(&b, &chosen, &stats);
    json_records(&b, &chosen);
    tg__strbuf_puts(&b, ",\"skipped\":[");
    tg_cli_json_skipped(&b, skipped, nskipped);
    tg__strbuf_puts(&b, "]}\n");
  } else {
    char b1[32];
    text_header(&b, "run", &shown, &chosen);
    tg_cli_text_skipped(&b, skipped, nskipped);
    tg__strbuf_printf(&b, "backend %s, device \"%s\" (%s); storage %s %s, mode %s, strategy %s, policy %s\n",
                      tg_backend_name(info->backend), info->name, info->kind, tg_storage_name(sp->storage),
                      tg_precision_name(sp->precision), tg_mode_name(chosen.options[TG_SET_DEVICE].plan.mode),
                      tg_strategy_name(chosen.options[TG_SET_DEVICE].plan.strategy), tg_policy_name(req->policy));
    text_spaces(&b, &chosen, &stats);
    tg__strbuf_printf(&b, "On-device check (%s%s): %llu corrupted tensors, %s verified; gpu ops as kernels, "
                          "cpu ops on the host through %s memory\n",
                      req->out_of_order ? "out of order" : "in order",
                      req->no_reuse_edges ? ", graph edges only" : "", (unsigned long long)result.corrupted_records,
                      tg_report_format_bytes(result.checked_bytes, b1, sizeof b1),
                      chosen.spaces->sets[TG_SET_SHARED].records->count ? "host and mapped shared" : "host");
    if (info->backend == TG_BACKEND_VULKAN)
      tg__strbuf_printf(&b, "Validation messages: %llu\n", (unsigned long long)messages);
    tg__strbuf_printf(&b, "Times: plan %.2f ms, allocate %.2f ms, check %.2f ms\n", (double)chosen.plan_us / 1000.0,
                      (double)allocate_us / 1000.0, (double)check_us / 1000.0);
  }
  int code = result.corrupted_records ? TG_EXIT_FAILURE : TG_EXIT_OK;
  hetero_free(&chosen);
  tg_device_close(dev);
  return emit(&b, code);
}
