/* `tangram plan`: run planning strategies on usage records and report totals, bounds and
 * validity. */
#include <string.h>
#include <unistd.h>

#include "tangram/report.h"
#include "tangram/schedule.h"
#include "tools/cli.h"
#include "tools/input.h"
#include "tools/plan_file_cli.h"
#include "tools/place_cli.h"
#include "tools/range_cli.h"

static void plan_usage(FILE *to) {
  fputs(
      "usage: tangram plan FILE [options]\n"
      "\n"
      "FILE is a model (.tflite, .onnx or text graph, see docs/models.md) or a usage-record CSV\n"
      "([name,]size,first,last | [name,]width,height[,depth],first,last | id,lower,upper,size).\n"
      "\n"
      "options:\n"
      "  --mode objects|offsets   shared objects (default) or offsets in one arena (1D only)\n"
      "  --strategy NAME|all      naive, equality, greedy-in-order, greedy-by-breadth,\n"
      "                           greedy-by-size, min-cost-flow (TFLite), beam (seed 000),\n"
      "                           allocation-tree (PyTorch), greedy-coloring (Mini-Infer),\n"
      "                           greedy-by-conflicts, hill-climb (TVM), best (Tangram), or\n"
      "                           all (default: those of the mode, best last; the table and\n"
      "                           JSON \"origin\" name each one's source)\n"
      "  --beam-width K           strategy beam: states kept per step (default 8; 1 = greedy)\n"
      "  --fit best|first|worst   free-block choice for offsets greedy-in-order (default: all\n"
      "                           three with --strategy all, else best)\n"
      "  --alignment N            offsets are multiples of N bytes (default 1; with --save in\n"
      "                           offsets mode 256); objects mode: greedy-coloring rounds 1D\n"
      "                           sizes up to N (Mini-Infer: 256)\n",
      to);
  fputs(
      "  --max-texture-size WxH[xL]  a smaller device: 2D and 3D textures at most W x H texels\n"
      "                           (and L array layers / 3D depth);\n"
      "                           a tensor beyond it falls back, as TFLite's GPU delegate does,\n"
      "                           to the first that fits of texture_2d (from texture_array or\n"
      "                           texture_3d), image_buffer, buffer (JSON \"fallback_tensors\",\n"
      "                           \"fallbacks\" with each tensor's storage, \"fallback_storages\")\n"
      "  --no-fallback            a tensor that does not fit its storage is an error (exit 2)\n"
      "  --max-allocation BYTES   the device's largest allocation (K, M, G suffixes): offsets\n"
      "                           plans span several arenas of at most BYTES each (JSON\n"
      "                           \"arenas\", \"arena_of\"); objects: every object within it; a\n"
      "                           tensor larger than BYTES is an error\n"
      "  --storage S              models: buffer (default), image_buffer, texture_2d,\n"
      "                           texture_array, texture_3d, single_texture_2d\n"
      "  --precision fp32|fp16    models: element precision (default fp32)\n"
      "  --policy P               serial (default), parallel-safe, branch-local, or all (models)\n"
      "  --plan-io                models: plan graph inputs and outputs too\n",
      to);
  fputs(TG_CLI_IN_PLACE_HELP
      TG_CLI_RANGE_HELP
      "  --svg-dir DIR            with a range: DIR/<model>.<storage>.<mode>.range.svg, memory\n"
      "                           against size (plan, own best, upper bound, pool, bound)\n"
      "  --reorder                models, serial policy only: search a topological op order\n"
      "                           with a smaller peak of live memory (off by default; exact\n"
      "                           for small graphs, heuristic otherwise, never worse than the\n"
      "                           model's order) and plan the records of that order; reports\n"
      "                           the peak before and after (JSON key \"reorder\")\n"
      "  --time-limit MS          strategy best: the whole call within MS milliseconds (plus\n"
      "                           at most a tenth and 20 ms), searching for a smaller plan;\n"
      "                           0 = no search; default 1000 (the library's default is 10 ms\n"
      "                           of search, meant for engines at load time); the search stops\n"
      "                           early once its plan meets a proved bound\n"
      "  --seed N                 search seed (same seed, same plan; default 0)\n"
      "  --exact                  strategy best, 1D: the search within --time-limit (default\n"
      "                           1000 ms, kept as every limit is), the same plan as best's,\n"
      "                           proving optimality or reporting the gap; JSON \"exact\" says\n"
      "                           whether it proved optimality or ran out of time (\"ended\")\n"
      "  --subset-bound           objects mode: also the subset bound, the exact optimum of\n"
      "                           a subset of up to 15 records (JSON \"subset_bound\"; takes\n"
      "                           up to a few tenths of a second)\n"
      "  --lp-bound               objects mode: also the LP bound, from the linear programme\n"
      "                           over objects (column generation; exact integer proof), often\n"
      "                           equal to the best plan's total (JSON \"lp_bound\"; up to\n"
      "                           about a second, up to 1024 records)\n",
      to);
  fputs(
      "  --json                   one JSON object on stdout instead of the table\n"
      "  --csv-out FILE           write the smallest plan as tensor_name,size,offset,start_time,\n"
      "                           end_time,object,storage\n"
      "  --svg FILE               draw the smallest plan as an SVG memory timeline\n",
      to);
  fputs(
      "  --save FILE              write the smallest plan (with --strategy all: the best of\n"
      "                           them), its records, storage, precision, policy and model\n"
      "                           name to a plan file for `tangram run MODEL --plan FILE`\n"
      "                           (docs/plan-files.md); offsets plans are then aligned to 256\n"
      "                           bytes unless --alignment is given (every Vulkan device and the\n"
      "                           common OpenCL devices accept 256); the file records the\n"
      "                           alignment, the allocation cap and the texture limits, which\n"
      "                           run --plan checks against the device. With a range: the plan\n"
      "                           reported, over every size of it (run --plan runs any of them)\n"
      TG_CLI_PLACE_USAGE
      "                           (models; plans each space with --strategy, best for all)\n"
      "  -h, --help               this text\n"
      "\n"
      "Totals are bytes for 1D records and texels for 2D/3D records. Lower bounds: peak live\n"
      "(offsets), the positional maximum (objects, \"x bound\"), and in objects mode a\n"
      "shape-aware bound that pays for per-dimension maxima (JSON \"shape_bound\").\n"
      "Exit status: 0 ok, 1 failure, 2 bad usage or input.\n",
      to);
}

typedef struct plan_result {
  tg_policy policy;
  tg_strategy strategy;
  tg_fit fit;
  int has_fit;
  tg_plan *plan;        /* NULL when skipped */
  uint64_t plan_us;
  int valid;
  char invalid_reason[TG_ERROR_MESSAGE_MAX];
  const char *skipped;  /* reason, when not run */
  int exact;            /* the result the exact mode ran on (--exact) */
} plan_result;

#define MAX_RESULTS (TG_POLICY_COUNT * (TG_STRATEGY_COUNT + 2)) /* greedy-in-order: 3 fits */

/* What `--policy all` shows per policy: the smallest plan, and for serial what running it on a
 * parallel runtime costs. */
typedef struct policy_summary {
  int present;
  uint64_t best_total;
  int has_waits;
  size_t extra_edges;
  size_t critical_path, critical_path_with_reuse;
} policy_summary;

static void json_u64_array(tg__strbuf *b, const char *key, const uint64_t *v, size_t n) {
  tg__strbuf_printf(b, ",\"%s\":[", key);
  for (size_t i = 0; i < n; ++i) tg__strbuf_printf(b, "%s%llu", i ? "," : "", (unsigned long long)v[i]);
  tg__strbuf_puts(b, "]");
}

/* --strategy all: every strategy but best in enum order, then best. */
static tg_strategy display_strategy(int i) {
  return i == TG_STRATEGY_COUNT - 1 ? TG_STRATEGY_BEST
                                    : (tg_strategy)(i < TG_STRATEGY_BEST ? i : i + 1);
}

/* Offsets mode: the lower bound that holds for a result's plan, and which bound gave it (the
 * exact mode's when it proved more). */
static void json_lower_bound(tg__strbuf *b, const plan_result *r, const tg_offsets_bound *ob,
                             const tg_exact_stats *es) {
  uint64_t bytes = ob->bytes;
  tg_bound_source source = ob->source;
  if (r->exact && es->lower_bound > bytes) {
    bytes = es->lower_bound;
    source = TG_BOUND_EXACT_SEARCH;
  }
  tg__strbuf_printf(b, ",\"lower_bound\":{\"bytes\":%llu,\"source\":\"%s\"}", (unsigned long long)bytes,
                    tg_bound_source_name(source));
}

static void json_result(tg__strbuf *b, const plan_result *r, uint32_t dims, const tg_offsets_bound *ob,
                        const tg_exact_stats *es) {
  tg__strbuf_printf(b, "{\"policy\":\"%s\",\"strategy\":\"%s\",\"origin\":\"%s\"",
                    tg_policy_name(r->policy), tg_strategy_name(r->strategy),
                    tg_strategy_origin(r->strategy));
  if (r->has_fit) tg__strbuf_printf(b, ",\"fit\":\"%s\"", tg_fit_name(r->fit));
  if (r->plan == NULL) {
    tg__strbuf_puts(b, ",\"skipped\":");
    tg__strbuf_json_string(b, r->skipped);
    tg__strbuf_puts(b, "}");
    return;
  }
  const tg_plan *p = r->plan;
  if (r->strategy == TG_STRATEGY_BEST) {
    tg__strbuf_printf(b, ",\"winner\":\"%s\"", tg_strategy_name(p->strategy));
    if (p->mode == TG_MODE_OFFSETS && p->strategy == TG_STRATEGY_GREEDY_IN_ORDER)
      tg__strbuf_printf(b, ",\"winner_fit\":\"%s\"", tg_fit_name(p->fit));
  }
  tg__strbuf_printf(b, ",\"total\":%llu,\"objects\":%zu,\"valid\":%s,\"plan_us\":%llu",
                    (unsigned long long)p->total, p->object_count, r->valid ? "true" : "false",
                    (unsigned long long)r->plan_us);
  if (!r->valid) {
    tg__strbuf_puts(b, ",\"invalid_reason\":");
    tg__strbuf_json_string(b, r->invalid_reason);
  }
  if (p->mode == TG_MODE_OBJECTS) {
    tg__strbuf_puts(b, ",\"object_of\":[");
    for (size_t i = 0; i < p->record_count; ++i) tg__strbuf_printf(b, "%s%u", i ? "," : "", p->object_of[i]);
    tg__strbuf_puts(b, "],\"object_sizes\":[");
    for (size_t k = 0; k < p->object_count; ++k) {
      const tg_extent *e = &p->object_sizes[k];
      if (k) tg__strbuf_puts(b, ",");
      if (dims == 1) tg__strbuf_printf(b, "%llu", (unsigned long long)e->w);
      else if (dims == 2) tg__strbuf_printf(b, "[%llu,%llu]", (unsigned long long)e->w, (unsigned long long)e->h);
      else tg__strbuf_printf(b, "[%llu,%llu,%llu]", (unsigned long long)e->w, (unsigned long long)e->h, (unsigned long long)e->d);
    }
    tg__strbuf_puts(b, "]");
  } else {
    json_lower_bound(b, r, ob, es);
    json_u64_array(b, "offset_of", p->offset_of, p->record_count);
    /* Arenas: their sizes, and each record's (offset_of is within it). */
    tg_cli_json_arenas(b, p, 1);
  }
  tg__strbuf_puts(b, "}");
}

/* Models with control flow: records and their sizes grouped by subgraph. */
static void text_subgraphs(tg__strbuf *b, const tg_cli_input *in, const char *unit) {
  const tg_graph *g = in->graph;
  const tg_record_set *set = in->records;
  tg__strbuf_printf(b, "%-40s %-7s %6s %8s %14s\n", "subgraph", "kind", "ops", "records", "record sizes");
  static const char *const k_kinds[] = {"main", "branch", "body", "call"};
  for (size_t s = 0; s < g->flow_count; ++s) {
    size_t ops = 0, records = 0;
    uint64_t bytes = 0;
    for (size_t o = 0; o < g->op_count; ++o) ops += g->ops[o].subgraph == s;
    for (size_t r = 0; r < set->count; ++r) {
      if (g->tensors[in->tensor_of[r]].subgraph != s) continue;
      uint64_t v = 0;
      tg_extent_volume(set->records[r].size, &v);
      ++records;
      bytes += v;
    }
    const tg_subgraph *sg = &g->subgraphs[s];
    tg__strbuf_printf(b, "%-40.40s %-7s %6zu %8zu %14llu %s\n", sg->name ? sg->name : "",
                      (unsigned)sg->kind < 4 ? k_kinds[sg->kind] : "?", ops, records, (unsigned long long)bytes, unit);
  }
}

/* Per record, in record order: who writes it, who reads it, its size, so anyone can check a
 * plan's safety without Tangram. */
static void json_model_records(tg__strbuf *b, const tg_cli_input *in) {
  const tg_record_set *set = in->records;
  const tg_lifetimes *lt = in->lifetimes;
  tg__strbuf_puts(b, ",\"names\":[");
  for (size_t r = 0; r < set->count; ++r) {
    if (r) tg__strbuf_puts(b, ",");
    tg__strbuf_json_string(b, set->names[r]);
  }
  tg__strbuf_puts(b, "],\"tensor_of\":[");
  for (size_t r = 0; r < set->count; ++r) tg__strbuf_printf(b, "%s%u", r ? "," : "", in->tensor_of[r]);
  tg__strbuf_puts(b, "],\"producer_of\":[");
  for (size_t r = 0; r < set->count; ++r)
    tg__strbuf_printf(b, "%s%d", r ? "," : "", lt->tensors[in->tensor_of[r]].producer);
  tg__strbuf_puts(b, "],\"consumers_of\":[");
  for (size_t r = 0; r < set->count; ++r) {
    const tg_tensor_lifetime *t = &lt->tensors[in->tensor_of[r]];
    tg__strbuf_puts(b, r ? ",[" : "[");
    for (uint32_t c = 0; c < t->consumer_count; ++c) tg__strbuf_printf(b, "%s%u", c ? "," : "", t->consumers[c]);
    tg__strbuf_puts(b, "]");
  }
  tg__strbuf_puts(b, "],\"size_of\":[");
  for (size_t r = 0; r < set->count; ++r) {
    uint64_t v = 0;
    tg_extent_volume(set->records[r].size, &v);
    tg__strbuf_printf(b, "%s%llu", r ? "," : "", (unsigned long long)v);
  }
  tg__strbuf_puts(b, "],\"subgraph_of\":[");
  for (size_t r = 0; r < set->count; ++r) {
    const tg_tensor *t = &in->graph->tensors[in->tensor_of[r]];
    const tg_graph *g = in->graph;
    if (r) tg__strbuf_puts(b, ",");
    tg__strbuf_json_string(b, g->flow_count > 0 && t->subgraph < g->flow_count ? g->subgraphs[t->subgraph].name : "main");
  }
  tg__strbuf_puts(b, "],\"shape_of\":[");
  for (size_t r = 0; r < set->count; ++r) {
    const tg_tensor *t = &in->graph->tensors[in->tensor_of[r]];
    tg__strbuf_puts(b, r ? ",[" : "[");
    for (uint32_t d = 0; d < t->rank; ++d) tg__strbuf_printf(b, "%s%lld", d ? "," : "", (long long)t->shape[d]);
    tg__strbuf_puts(b, "]");
  }
  tg__strbuf_puts(b, "]");
  tg_cli_json_fallbacks(b, in->model_records);
}

/* The smallest plan as seed 000's CSV columns (+ object), or as an SVG timeline. */
static int write_plan_report(const char *path, int svg, const tg_record_set *set, const tg_plan *p,
                             uint64_t lower, const char *title, const tg_allocator *alloc) {
  char *text = NULL;
  size_t length = 0;
  const char *const *names = (const char *const *)set->names;
  tg_status st = svg ? tg_report_render_svg(set->records, names, set->count, set->dims, p, lower, 1,
                                            title, alloc, &text, &length)
                     : tg_report_build_csv(set->records, names, NULL, set->count, set->dims, p, 1,
                                           alloc, &text, &length);
  if (st != TG_OK) {
    tg_cli_error("plan: writing %s failed: %s", path, tg_status_string(st));
    return 0;
  }
  int ok = tg_cli_write_file(path, text, length);
  tg_report_free(alloc, text);
  return ok;
}

static int parse_error(const char *what, const char *value, const char *choices) {
  tg_cli_error("plan: %s must be %s, not '%s'", what, choices, value);
  return TG_EXIT_USAGE;
}

/* --exact on a terminal: one line per progress report. */
static void exact_progress(void *user, const tg_exact_stats *s) {
  (void)user;
  fprintf(stderr, "exact: nodes %llu, best %llu, bound %llu, %.1f s%s\n", (unsigned long long)s->nodes,
          (unsigned long long)s->total, (unsigned long long)s->lower_bound,
          (double)s->elapsed_us / 1e6, s->proved_optimal ? ", optimal" : "");
}

int tg_cli_plan(int argc, char **argv) {
  const char *file = NULL, *mode_s = "objects", *strategy_s = "all", *fit_s = NULL;
  const char *align_s = NULL, *csv_out = NULL, *svg_out = NULL, *storage_s = "buffer", *precision_s = "fp32";
  const char *policy_s = "serial", *time_s = NULL, *seed_s = NULL, *save_out = NULL, *beam_s = NULL;
  const char *cap_s = NULL, *texture_s = NULL;
  int no_fallback = 0;
  int json = 0, plan_io = 0, exact = 0, reorder = 0, want_subset = 0, want_lp = 0, in_place = 0;
  tg_cli_model_options shapes;
  memset(&shapes, 0, sizeof shapes);
  tg_cli_place_request place;
  memset(&place, 0, sizeof place);
  tg_cli_range_options ropt = {NULL, NULL, NULL, 1};
  shapes.ranges = 1;
  for (int i = 1; i < argc;) {
    const char *v;
    int m;
    if ((m = tg_cli_input_shape_option(argc, argv, &i, &shapes)) != 0) {
      if (m < 0) return TG_EXIT_USAGE;
      continue;
    }
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      plan_usage(stdout);
      return TG_EXIT_OK;
    }
    if ((m = tg_cli_place_option(argc, argv, &i, &place)) != 0 ||
        (m = tg_cli_range_option(argc, argv, &i, &ropt)) != 0) {
      if (m < 0) return TG_EXIT_USAGE;
      continue;
    }
    if (strcmp(argv[i], "--json") == 0) { json = 1; ++i; continue; }
    if (strcmp(argv[i], "--plan-io") == 0) { plan_io = 1; ++i; continue; }
    if (strcmp(argv[i], "--in-place") == 0) { in_place = 1; ++i; continue; }
    if (strcmp(argv[i], "--no-fallback") == 0) { no_fallback = 1; ++i; continue; }
    if (strcmp(argv[i], "--exact") == 0) { exact = 1; ++i; continue; }
    if (strcmp(argv[i], "--reorder") == 0) { reorder = 1; ++i; continue; }
    if (strcmp(argv[i], "--subset-bound") == 0) { want_subset = 1; ++i; continue; }
    if (strcmp(argv[i], "--lp-bound") == 0) { want_lp = 1; ++i; continue; }
    static const char *const k_value_options[] = {"--mode", "--strategy", "--fit", "--alignment",
                                                   "--csv-out", "--storage", "--precision", "--policy",
                                                   "--time-limit", "--seed", "--svg", "--save", "--beam-width",
                                                   "--max-allocation", "--max-texture-size"};
    const char **k_targets[] = {&mode_s, &strategy_s, &fit_s, &align_s, &csv_out, &storage_s, &precision_s, &policy_s,
                                &time_s, &seed_s, &svg_out, &save_out, &beam_s, &cap_s, &texture_s};
    int matched = 0;
    for (size_t o = 0; o < sizeof k_value_options / sizeof k_value_options[0] && !matched; ++o) {
      if ((m = tg_cli_option(argc, argv, &i, k_value_options[o], &v)) != 0) {
        if (m < 0) return TG_EXIT_USAGE;
        *k_targets[o] = v;
        matched = 1;
      }
    }
    if (matched) continue;
    if (argv[i][0] == '-' && argv[i][1] != '\0') {
      tg_cli_error("plan: unknown option '%s' (see tangram plan --help)", argv[i]);
      return TG_EXIT_USAGE;
    }
    if (file != NULL) {
      tg_cli_error("plan: more than one input file ('%s' and '%s')", file, argv[i]);
      return TG_EXIT_USAGE;
    }
    file = argv[i++];
  }
  if (file == NULL) {
    plan_usage(stderr);
    return TG_EXIT_USAGE;
  }
  tg_mode mode;
  if (tg_mode_from_name(mode_s, &mode) != TG_OK) return parse_error("--mode", mode_s, "objects or offsets");
  int all = strcmp(strategy_s, "all") == 0;
  tg_strategy one = TG_STRATEGY_BEST;
  if (!all && tg_strategy_from_name(strategy_s, &one) != TG_OK)
    return parse_error("--strategy", strategy_s,
                       "naive, equality, greedy-in-order, greedy-by-breadth, greedy-by-size, "
                       "min-cost-flow, beam, allocation-tree, greedy-coloring, "
                       "greedy-by-conflicts, hill-climb, best or all");
  tg_fit fit = TG_FIT_BEST;
  if (fit_s && tg_fit_from_name(fit_s, &fit) != TG_OK) return parse_error("--fit", fit_s, "best, first or worst");
  uint64_t alignment = 1;
  if (align_s && (!tg_cli_parse_u64(align_s, 0, &alignment) || alignment == 0))
    return parse_error("--alignment", align_s, "a positive integer");
  /* A saved offsets plan runs elsewhere: an alignment every Vulkan device and the common
   * OpenCL devices accept, unless one is given. */
  if (!align_s && save_out && mode == TG_MODE_OFFSETS) alignment = TG_CLI_PORTABLE_ALIGNMENT;
  uint64_t max_allocation = 0;
  if (cap_s && !tg_cli_parse_max_allocation("plan", cap_s, &max_allocation)) return TG_EXIT_USAGE;
  tg_device_limits limits = tg_device_limits_default();
  uint64_t tex_w = 0, tex_h = 0, tex_d = 0;
  if (texture_s && !tg_cli_parse_texture_size("plan", texture_s, &tex_w, &tex_h, &tex_d)) return TG_EXIT_USAGE;
  if (texture_s) tg_cli_limit_texture_size(&limits, tex_w, tex_h, tex_d);
  uint64_t time_limit = 0, seed = 0;
  if (time_s && (!tg_cli_parse_u64(time_s, 0, &time_limit) || time_limit >= TG_TIME_LIMIT_NONE))
    return parse_error("--time-limit", time_s, "milliseconds (0 to 4294967294)");
  if (time_s && time_limit == 0) time_limit = TG_TIME_LIMIT_NONE; /* 0: no search */
  if (time_s == NULL && !exact) time_limit = TG_CLI_DEFAULT_TIME_LIMIT_MS;
  uint64_t beam_width = 0;
  if (beam_s && (!tg_cli_parse_u64(beam_s, 0, &beam_width) || beam_width == 0 || beam_width > 65536))
    return parse_error("--beam-width", beam_s, "a number of states from 1 to 65536");
  if (seed_s && !tg_cli_parse_u64(seed_s, 0, &seed))
    return parse_error("--seed", seed_s, "a non-negative integer");
  tg_exact_stats exact_stats;
  memset(&exact_stats, 0, sizeof exact_stats);
  int exact_ran = 0;
  if (exact && !json && isatty(STDERR_FILENO)) exact_stats.progress = exact_progress;
  tg_cli_input_options iopt = {TG_STORAGE_BUFFER, TG_PRECISION_FP32, plan_io, &limits, &shapes.options, 0, 1};
  if (tg_storage_from_name(storage_s, &iopt.storage) != TG_OK)
    return parse_error("--storage", storage_s,
                       "buffer, image_buffer, texture_2d, texture_array, texture_3d or single_texture_2d");
  if (tg_precision_from_name(precision_s, &iopt.precision) != TG_OK)
    return parse_error("--precision", precision_s, "fp32 or fp16");
  int all_policies = strcmp(policy_s, "all") == 0;
  tg_policy policy = TG_POLICY_SERIAL;
  if (!all_policies && tg_policy_from_name(policy_s, &policy) != TG_OK)
    return parse_error("--policy", policy_s, "serial, parallel-safe, branch-local or all");
  if (tg_cli_range_given(&shapes.options)) {
    tg_cli_plan_range_request rq = {
        file, &shapes.options, iopt.storage, iopt.precision, plan_io, &limits, mode, all ? TG_STRATEGY_BEST : one,
        fit, alignment, policy, (uint32_t)beam_width, seed, (uint32_t)time_limit, in_place, max_allocation, json,
        no_fallback, save_out, all_policies ? "--policy all" : reorder ? "--reorder" : exact ? "--exact" : want_subset ?
        "--subset-bound" : want_lp ? "--lp-bound" : csv_out ? "--csv-out" : svg_out ? "--svg (give --svg-dir)" :
        tg_cli_place_given(&place) ? "--place" : NULL, ropt};
    return tg_cli_plan_range(&rq);
  }
  if (ropt.sizes || ropt.svg_dir || ropt.own_time_s) {
    tg_cli_error("plan: --sizes, --own-time-limit and --svg-dir go with a range of sizes (--input-shape LO..HI)");
    return TG_EXIT_USAGE;
  }
  if (tg_cli_place_given(&place)) {
    if (all_policies || reorder || exact || want_subset || want_lp || csv_out || svg_out || in_place) {
      tg_cli_error("plan: --place does not combine with --policy all, --reorder, --exact, "
                   "--subset-bound, --lp-bound, --csv-out, --svg or --in-place");
      return TG_EXIT_USAGE;
    }
    place.model = file;
    place.model_options = &shapes.options;
    place.storage = iopt.storage;
    place.precision = iopt.precision;
    place.mode = mode;
    place.strategy = all ? TG_STRATEGY_BEST : one;
    place.policy = policy;
    place.plan_io = plan_io;
    place.json = json;
    place.time_limit_ms = (uint32_t)time_limit;
    place.seed = seed;
    place.alignment = alignment;
    place.fit = fit;
    place.max_allocation = max_allocation;
    return tg_cli_place_plan(&place);
  }
  if (reorder && (all_policies || policy != TG_POLICY_SERIAL)) {
    /* Another order changes which ops may run concurrently: only serial execution is covered. */
    tg_cli_error("plan: --reorder works only with --policy serial (not '%s')", policy_s);
    return TG_EXIT_USAGE;
  }
  if (reorder && save_out) {
    /* The records would follow the searched op order, which a plan file does not hold. */
    tg_cli_error("plan: --save does not work with --reorder (the plan would be for another op order)");
    return TG_EXIT_USAGE;
  }

  tg_failing_allocator fa;
  const tg_allocator *alloc = tg_cli_allocator(&fa);
  tg_error_info err = {{0}};
  tg_cli_input in;
  tg_status st = tg_cli_input_load(file, &iopt, alloc, &in, &err);
  if (st == TG_OK && reorder) st = tg_cli_input_reorder(&in, &iopt, NULL, &err);
  if (st != TG_OK) {
    tg_cli_error("%s%s", reorder && st == TG_ERROR_INVALID_ARGUMENT ? "plan: " : "",
                 err.message[0] ? err.message : tg_status_string(st));
    return tg_cli_exit_code(st);
  }
  const tg_record_set *set = in.records;
  int code = TG_EXIT_OK;
  plan_result results[MAX_RESULTS];
  size_t nres = 0;
  memset(results, 0, sizeof results);
  policy_summary summary[TG_POLICY_COUNT];
  memset(summary, 0, sizeof summary);
  tg_bounds bounds;

  const tg_model_fallback *first_fb = tg_cli_first_fallback(in.model_records, NULL);
  if (no_fallback && first_fb) {
    tg_cli_error("plan: tensor %s does not fit %s: %s (--no-fallback; %zu tensors in all)",
                 in.graph->tensors[first_fb->tensor_of[0]].name, tg_storage_name(iopt.storage),
                 first_fb->reasons[0], tg_model_records_fallback_count(in.model_records));
    st = TG_ERROR_INVALID_ARGUMENT;
    goto fail;
  }
  if (mode == TG_MODE_OFFSETS && set->dims != 1) {
    tg_cli_error("plan: offsets mode needs 1D records (%s gives %uD texture extents)", file, set->dims);
    st = TG_ERROR_INVALID_ARGUMENT;
    goto fail;
  }
  if ((want_subset || want_lp) && mode != TG_MODE_OBJECTS) {
    tg_cli_error("plan: %s bounds objects plans; add --mode objects", want_lp ? "--lp-bound" : "--subset-bound");
    st = TG_ERROR_INVALID_ARGUMENT;
    goto fail;
  }
  if (want_subset && in_place) {
    tg_cli_error("plan: --subset-bound does not combine with --in-place");
    st = TG_ERROR_INVALID_ARGUMENT;
    goto fail;
  }
  if (exact && set->dims != 1) {
    tg_cli_error("plan: --exact needs 1D records (%s gives %uD texture extents)", file, set->dims);
    st = TG_ERROR_INVALID_ARGUMENT;
    goto fail;
  }
  if (!all && !tg_strategy_applies(one, mode, set->dims)) {
    tg_cli_error("plan: strategy %s does not plan %uD records in %s mode", strategy_s, set->dims,
                 tg_mode_name(mode));
    st = TG_ERROR_INVALID_ARGUMENT;
    goto fail;
  }
  if (in.graph == NULL && (all_policies || policy != TG_POLICY_SERIAL)) {
    tg_cli_error("plan: --policy %s needs a model; a usage-record CSV has only the serial order", policy_s);
    st = TG_ERROR_INVALID_ARGUMENT;
    goto fail;
  }
  size_t min_arenas = 0;
  if (max_allocation > 0) {
    if (!tg_cli_check_max_allocation("plan", set, tg_precision_texel_bytes(iopt.precision), max_allocation)) {
      st = TG_ERROR_INVALID_ARGUMENT;
      goto fail;
    }
    if (mode == TG_MODE_OFFSETS &&
        (st = tg_bounds_arena_count(set->records, set->count, max_allocation, alloc, &min_arenas)) != TG_OK) {
      tg_cli_error("plan: arena bound: %s", tg_status_string(st));
      goto fail;
    }
  }
  st = tg_bounds_compute(set->records, set->count, set->dims, alloc, &bounds);
  uint64_t shape_bound = 0; /* objects mode: the shape-aware bound (>= positional_max) */
  uint64_t subset_bound = 0; /* --subset-bound: the subset bound (>= positional_max) */
  if (st == TG_OK && mode == TG_MODE_OBJECTS)
    st = tg_bounds_objects_shape(set->records, set->count, set->dims, alloc, &shape_bound);
  if (st == TG_OK && want_subset)
    st = tg_bounds_objects_subset(set->records, set->count, set->dims, 0, alloc, &subset_bound);
  uint64_t lp_bound = 0; /* --lp-bound: the LP bound (>= positional_max) */
  if (st == TG_OK && want_lp)
    st = tg_bounds_objects_lp(set->records, set->count, set->dims, 0, 0, alloc, &lp_bound);
  /* --in-place: the bounds of the problem with the candidates (each chain counted once). */
  const tg_in_place_pair *ip = in_place ? in.in_place : NULL;
  const size_t ip_count = in_place ? in.in_place_count : 0;
  tg_bounds ip_bounds = bounds;
  if (st == TG_OK && ip_count > 0) {
    st = tg_bounds_compute_in_place(set->records, set->count, set->dims, ip, ip_count, alloc, &ip_bounds,
                                    want_lp ? &lp_bound : NULL);
    /* The shape-aware bound holds only without the pairs: the positional maximum with them. */
    if (st == TG_OK && mode == TG_MODE_OBJECTS) shape_bound = ip_bounds.positional_max;
  }
  /* Offsets mode: the strongest lower bound (subset-exact where peak-live is not tight); with
   * --in-place, the in-place problem's peak-live (the subset bound ignores the pairs). */
  tg_offsets_bound obound = {ip_bounds.peak_live, TG_BOUND_PEAK_LIVE, 0};
  if (st == TG_OK && mode == TG_MODE_OFFSETS && ip_count == 0)
    st = tg_bounds_offsets(set->records, set->count, set->dims, alignment, 0, alloc, &obound);
  if (st != TG_OK) {
    tg_cli_error("plan: bounds: %s", tg_status_string(st));
    goto fail;
  }

  for (int pol = 0; pol < TG_POLICY_COUNT; ++pol) {
    if (!all_policies && pol != (int)policy) continue;
    tg_policy_relation *rel = NULL;
    st = tg_cli_input_relation(&in, (tg_policy)pol, &rel, &err);
    if (st != TG_OK) {
      tg_cli_error("plan: %s", err.message);
      goto fail;
    }
    const tg_share_relation *relation = tg_policy_relation_get(rel);
    summary[pol].present = 1;
    for (int si = 0; si < TG_STRATEGY_COUNT; ++si) {
      const int s = (int)display_strategy(si);
      if (!all && s != (int)one) continue;
      if (all_policies && s != TG_STRATEGY_BEST) continue; /* side by side: best per policy */
      if (!tg_strategy_applies((tg_strategy)s, mode, set->dims)) continue;
      int fits = (mode == TG_MODE_OFFSETS && s == TG_STRATEGY_GREEDY_IN_ORDER && all && !fit_s) ? 3 : 1;
      for (int f = 0; f < fits; ++f) {
        plan_result *r = &results[nres++];
        r->policy = (tg_policy)pol;
        r->strategy = (tg_strategy)s;
        r->has_fit = mode == TG_MODE_OFFSETS && s == TG_STRATEGY_GREEDY_IN_ORDER;
        r->fit = fits > 1 ? (tg_fit)f : fit;
        if (all && s == TG_STRATEGY_MIN_COST_FLOW && set->count > TG_DEFAULT_MCF_MAX_RECORDS) {
          r->skipped = "more records than min-cost-flow's limit (TG_DEFAULT_MCF_MAX_RECORDS)";
          continue;
        }
        tg_plan_options opt = {0};
        opt.mode = mode;
        opt.strategy = (tg_strategy)s;
        opt.fit = r->fit;
        opt.alignment = alignment;
        opt.relation = relation;
        opt.beam_width = (uint32_t)beam_width;
        opt.in_place = ip;
        opt.in_place_count = ip_count;
        opt.max_allocation = max_allocation;
        if (s == TG_STRATEGY_BEST) {
          opt.time_limit_ms = (uint32_t)time_limit;
          opt.seed = seed;
          if (exact && !exact_ran) {
            opt.exact = 1;
            opt.exact_stats = &exact_stats;
            exact_ran = 1;
            r->exact = 1;
          }
        }
        uint64_t t0 = tg__now_us();
        st = tg_plan_compute(set->records, set->count, set->dims, &opt, alloc, &r->plan);
        r->plan_us = tg__now_us() - t0;
        if (st != TG_OK) {
          tg_cli_error("plan: strategy %s failed: %s", tg_strategy_name((tg_strategy)s), tg_status_string(st));
          tg_policy_relation_destroy(rel);
          goto fail;
        }
        if (!tg_cli_check_objects_cap("plan", set, r->plan, tg_precision_texel_bytes(iopt.precision),
                                      max_allocation)) {
          st = TG_ERROR_INVALID_ARGUMENT;
          tg_policy_relation_destroy(rel);
          goto fail;
        }
        tg_error_info verr = {{0}};
        tg_status vs = tg_plan_validate(set->records, set->count, set->dims, r->plan, alignment,
                                        relation, alloc, &verr);
        r->valid = vs == TG_OK;
        if (vs != TG_OK && vs != TG_ERROR_INVALID_PLAN) {
          st = vs;
          tg_cli_error("plan: validator: %s", tg_status_string(vs));
          tg_policy_relation_destroy(rel);
          goto fail;
        }
        memcpy(r->invalid_reason, verr.message, sizeof verr.message);
        if (!summary[pol].best_total || r->plan->total < summary[pol].best_total) summary[pol].best_total = r->plan->total;
        /* What the policy's smallest plan needs on a parallel runtime. */
        if (in.schedule && s == TG_STRATEGY_BEST) {
          tg_waits *waits = NULL;
          st = tg_schedule_compute_waits(in.schedule, set->records, in.tensor_of, set->count,
                                         r->plan, alloc, &waits, &err);
          if (st != TG_OK) {
            tg_cli_error("plan: waits: %s", err.message);
            tg_policy_relation_destroy(rel);
            goto fail;
          }
          summary[pol].has_waits = 1;
          summary[pol].extra_edges = waits->reuse_edge_count;
          summary[pol].critical_path = waits->critical_path;
          summary[pol].critical_path_with_reuse = waits->critical_path_with_reuse;
          tg_waits_destroy(waits);
        }
      }
    }
    tg_policy_relation_destroy(rel);
  }

  /* With --in-place the plans may use the pairs: the in-place bounds are the ones they meet. */
  if (ip_count > 0) bounds = (tg_bounds){ip_bounds.peak_live, ip_bounds.positional_max, bounds.naive};
  uint64_t lower = mode == TG_MODE_OBJECTS ? bounds.positional_max : bounds.peak_live;
  const plan_result *smallest = NULL;
  for (size_t i = 0; i < nres; ++i) {
    if (results[i].plan == NULL) continue;
    if (smallest == NULL || results[i].plan->total < smallest->plan->total) smallest = &results[i];
  }
  const char *unit = set->dims == 1 ? "bytes" : "texels";
  char saved_fp[2 * TG_FINGERPRINT_BYTES + 1] = "";
  if (save_out) {
    if (smallest == NULL || !smallest->valid) {
      tg_cli_error("plan: --save: no valid plan to save");
      st = TG_ERROR_INVALID_ARGUMENT;
      goto fail;
    }
    int saved = tg_cli_plan_save(save_out, &in, file, &iopt, smallest->policy, smallest->strategy, alignment,
                                 smallest->plan, alloc, saved_fp);
    if (saved != TG_EXIT_OK) {
      for (size_t i = 0; i < nres; ++i) tg_plan_destroy(results[i].plan);
      tg_cli_input_free(&in);
      return saved;
    }
  }

  tg__strbuf out;
  tg__strbuf_init(&out, alloc);
  if (json) {
    tg__strbuf_printf(&out, "{\"input\":");
    tg__strbuf_json_string(&out, file);
    if (in.graph)
      tg__strbuf_printf(&out, ",\"storage\":\"%s\",\"precision\":\"%s\",\"tensors\":%zu,\"ops\":%zu",
                        tg_storage_name(iopt.storage), tg_precision_name(iopt.precision),
                        in.graph->tensor_count, in.graph->op_count);
    tg__strbuf_printf(&out,
                      ",\"records\":%zu,\"dims\":%u,\"mode\":\"%s\",\"policy\":\"%s\",\"unit\":\"%s\","
                      "\"alignment\":%llu,\"naive\":%llu,\"lower_bound\":%llu,\"peak_live\":%llu,"
                      "\"positional_max\":%llu",
                      set->count, set->dims, tg_mode_name(mode), all_policies ? "all" : tg_policy_name(policy),
                      unit, (unsigned long long)alignment, (unsigned long long)bounds.naive,
                      (unsigned long long)lower, (unsigned long long)bounds.peak_live,
                      (unsigned long long)bounds.positional_max);
    if (mode == TG_MODE_OBJECTS)
      tg__strbuf_printf(&out, ",\"shape_bound\":%llu", (unsigned long long)shape_bound);
    if (max_allocation > 0) {
      tg__strbuf_printf(&out, ",\"max_allocation\":%llu", (unsigned long long)max_allocation);
      if (mode == TG_MODE_OFFSETS) tg__strbuf_printf(&out, ",\"min_arenas\":%zu", min_arenas);
    }
    if (want_subset)
      tg__strbuf_printf(&out, ",\"subset_bound\":%llu", (unsigned long long)subset_bound);
    if (want_lp) tg__strbuf_printf(&out, ",\"lp_bound\":%llu", (unsigned long long)lp_bound);
    if (in.graph) json_model_records(&out, &in);
    tg_cli_json_assumed_inputs(&out, in.graph);
    if (in_place) {
      size_t views = 0;
      for (size_t k = 0; k < ip_count; ++k) views += ip[k].view != 0;
      tg__strbuf_printf(&out, ",\"in_place_candidates\":%zu,\"in_place_views\":%zu", ip_count, views);
      if (smallest) tg_cli_json_in_place(&out, smallest->plan->in_place, smallest->plan->in_place_count);
    }
    if (in.order) tg_cli_json_reorder(&out, in.order);
    if (exact_ran)
      tg__strbuf_printf(&out, ",\"exact\":{\"proved_optimal\":%s,\"ended\":\"%s\",\"nodes\":%llu,"
                        "\"lower_bound\":%llu,\"gap\":%llu,\"elapsed_ms\":%.3f}",
                        exact_stats.proved_optimal ? "true" : "false", tg_exact_end_name(exact_stats.ended),
                        (unsigned long long)exact_stats.nodes,
                        (unsigned long long)exact_stats.lower_bound,
                        (unsigned long long)(exact_stats.total - exact_stats.lower_bound),
                        (double)exact_stats.elapsed_us / 1000.0);
    tg__strbuf_puts(&out, ",\"results\":[");
    for (size_t i = 0; i < nres; ++i) {
      if (i) tg__strbuf_puts(&out, ",");
      json_result(&out, &results[i], set->dims, &obound, &exact_stats);
    }
    tg__strbuf_puts(&out, "]");
    if (in.graph) {
      tg__strbuf_puts(&out, ",\"policies\":[");
      int first = 1;
      for (int pol = 0; pol < TG_POLICY_COUNT; ++pol) {
        if (!summary[pol].present) continue;
        tg__strbuf_printf(&out, "%s{\"policy\":\"%s\",\"best_total\":%llu", first ? "" : ",",
                          tg_policy_name((tg_policy)pol), (unsigned long long)summary[pol].best_total);
        if (summary[pol].has_waits)
          tg__strbuf_printf(&out, ",\"extra_edges\":%zu,\"critical_path\":%zu,\"critical_path_with_reuse\":%zu",
                            summary[pol].extra_edges, summary[pol].critical_path,
                            summary[pol].critical_path_with_reuse);
        tg__strbuf_puts(&out, "}");
        first = 0;
      }
      tg__strbuf_puts(&out, "]");
    }
    if (save_out) {
      tg__strbuf_puts(&out, ",\"saved\":{\"file\":");
      tg__strbuf_json_string(&out, save_out);
      tg__strbuf_printf(&out, ",\"policy\":\"%s\",\"strategy\":\"%s\",\"winner\":\"%s\",\"total\":%llu,"
                              "\"fingerprint\":\"%s\"}",
                        tg_policy_name(smallest->policy), tg_strategy_name(smallest->strategy),
                        tg_strategy_name(smallest->plan->strategy), (unsigned long long)smallest->plan->total, saved_fp);
    }
    tg__strbuf_puts(&out, "}\n");
  } else {
    tg__strbuf_printf(&out, "%s: %zu records (%uD, %s), mode %s", file, set->count, set->dims, unit,
                      tg_mode_name(mode));
    if (in.graph)
      tg__strbuf_printf(&out, ", storage %s %s, %zu tensors, %zu ops", tg_storage_name(iopt.storage),
                        tg_precision_name(iopt.precision), in.graph->tensor_count, in.graph->op_count);
    tg__strbuf_printf(&out, "\nnaive %llu %s; lower bound %llu (%s)\n",
                      (unsigned long long)bounds.naive, unit, (unsigned long long)lower,
                      mode == TG_MODE_OBJECTS ? "positional maximum" : "peak live");
    if (max_allocation > 0 && mode == TG_MODE_OFFSETS)
      tg__strbuf_printf(&out, "allocation cap %llu bytes: at least %zu arenas (the objects column "
                              "counts arenas)\n",
                        (unsigned long long)max_allocation, min_arenas);
    else if (max_allocation > 0)
      tg__strbuf_printf(&out, "allocation cap %llu bytes: every object within it\n",
                        (unsigned long long)max_allocation);
    if (mode == TG_MODE_OBJECTS && shape_bound > lower)
      tg__strbuf_printf(&out, "shape-aware bound %llu %s (%.4fx the positional maximum): no objects "
                              "plan is smaller\n",
                        (unsigned long long)shape_bound, unit, (double)shape_bound / (double)lower);
    if (want_subset)
      tg__strbuf_printf(&out, "subset bound %llu %s (%.4fx the positional maximum; the exact optimum "
                              "of a record subset): no objects plan is smaller\n",
                        (unsigned long long)subset_bound, unit, (double)subset_bound / (double)lower);
    if (want_lp)
      tg__strbuf_printf(&out, "LP bound %llu %s (%.4fx the positional maximum; the linear programme "
                              "over objects): no objects plan is smaller\n",
                        (unsigned long long)lp_bound, unit, (double)lp_bound / (double)lower);
    if (in.graph && in.graph->flow_count > 0) text_subgraphs(&out, &in, unit);
    if (in.order) tg_cli_text_reorder(&out, in.order, unit);
    if (in_place) {
      size_t views = 0, used_views = 0;
      for (size_t k = 0; k < ip_count; ++k) views += ip[k].view != 0;
      const size_t used = smallest ? smallest->plan->in_place_count : 0;
      for (size_t k = 0; k < used; ++k) used_views += smallest->plan->in_place[k].view != 0;
      tg__strbuf_printf(&out, "in place: %zu candidate pairs (%zu views); the smallest plan uses %zu (%zu views); "
                              "the bounds count each chain once\n",
                        ip_count, views, used, used_views);
    }
    for (int g = 0; in.model_records && g < TG_STORAGE_FALLBACK_COUNT; ++g) {
      const tg_record_set *fs = in.model_records->fallbacks[tg_storage_fallback_at((uint32_t)g)].records;
      if (fs && fs->count)
        tg__strbuf_printf(&out, "%zu tensors do not fit %s and fall back to %s (not in this plan; see --json)\n",
                          fs->count, tg_storage_name(iopt.storage), tg_storage_name(tg_storage_fallback_at((uint32_t)g)));
    }
    tg__strbuf_printf(&out, "\n%-14s %-26s %-10s %14s %8s %10s %8s %10s  %s\n", "policy", "strategy",
                      "origin", "total", "objects", "% of naive", "x bound", "time", "valid");
    for (size_t i = 0; i < nres; ++i) {
      const plan_result *r = &results[i];
      char name[64];
      if (r->has_fit) snprintf(name, sizeof name, "%s (%s-fit)", tg_strategy_name(r->strategy), tg_fit_name(r->fit));
      else if (r->strategy == TG_STRATEGY_BEST && r->plan)
        snprintf(name, sizeof name, "best (= %s)", tg_strategy_name(r->plan->strategy));
      else snprintf(name, sizeof name, "%s", tg_strategy_name(r->strategy));
      if (r->plan == NULL) {
        tg__strbuf_printf(&out, "%-14s %-26s %-10s skipped: %s\n", tg_policy_name(r->policy), name,
                          tg_strategy_origin(r->strategy), r->skipped);
        continue;
      }
      double pct = bounds.naive ? 100.0 * (double)r->plan->total / (double)bounds.naive : 100.0;
      double ratio = lower ? (double)r->plan->total / (double)lower : 1.0;
      char time[32];
      if (r->plan_us < 10000) snprintf(time, sizeof time, "%llu us", (unsigned long long)r->plan_us);
      else snprintf(time, sizeof time, "%.1f ms", (double)r->plan_us / 1000.0);
      tg__strbuf_printf(&out, "%-14s %-26s %-10s %14llu %8zu %9.1f%% %8.3f %10s  %s\n", tg_policy_name(r->policy),
                        name, tg_strategy_origin(r->strategy), (unsigned long long)r->plan->total,
                        r->plan->mode == TG_MODE_OFFSETS ? r->plan->arena_count : r->plan->object_count,
                        pct, ratio, time, r->valid ? "yes" : "NO");
    }
    if (exact_ran)
      tg__strbuf_printf(&out, "\nexact: %s, %llu nodes, lower bound %llu, gap %llu %s\n",
                        exact_stats.proved_optimal ? "proved optimal" : "not proved",
                        (unsigned long long)exact_stats.nodes,
                        (unsigned long long)exact_stats.lower_bound,
                        (unsigned long long)(exact_stats.total - exact_stats.lower_bound), unit);
    if (in.graph) {
      tg__strbuf_puts(&out, "\non a parallel runtime (best plan of each policy):\n");
      for (int pol = 0; pol < TG_POLICY_COUNT; ++pol) {
        if (!summary[pol].present || !summary[pol].has_waits) continue;
        tg__strbuf_printf(&out, "  %-14s %llu %s, %zu extra wait edges, critical path %zu -> %zu ops\n",
                          tg_policy_name((tg_policy)pol), (unsigned long long)summary[pol].best_total,
                          unit, summary[pol].extra_edges, summary[pol].critical_path,
                          summary[pol].critical_path_with_reuse);
      }
    }
    if (save_out) {
      char name[64];
      if (smallest->strategy == TG_STRATEGY_BEST)
        snprintf(name, sizeof name, "best (= %s)", tg_strategy_name(smallest->plan->strategy));
      else snprintf(name, sizeof name, "%s", tg_strategy_name(smallest->strategy));
      tg__strbuf_printf(&out, "\nsaved the smallest plan, %s, policy %s, %llu %s, to %s (records fingerprint %.16s...)\n",
                        name, tg_policy_name(smallest->policy), (unsigned long long)smallest->plan->total, unit,
                        save_out, saved_fp);
    }
  }
  code = tg_cli_print_report(&out, code);
  for (size_t i = 0; i < nres; ++i)
    if (!results[i].valid && results[i].plan) {
      tg_cli_error("plan: %s produced an invalid plan: %s", tg_strategy_name(results[i].strategy),
                   results[i].invalid_reason);
      code = TG_EXIT_FAILURE;
    }
  if (csv_out && smallest && !write_plan_report(csv_out, 0, set, smallest->plan, lower, file, alloc))
    code = TG_EXIT_FAILURE;
  if (svg_out && smallest && !write_plan_report(svg_out, 1, set, smallest->plan, lower, file, alloc))
    code = TG_EXIT_FAILURE;
  for (size_t i = 0; i < nres; ++i) tg_plan_destroy(results[i].plan);
  tg_cli_input_free(&in);
  return code;

fail:
  for (size_t i = 0; i < nres; ++i) tg_plan_destroy(results[i].plan);
  tg_cli_input_free(&in);
  return tg_cli_exit_code(st);
}
