/* `tangram evaluate`: every storage x mode x strategy for a model, compared in bytes, the best
 * per storage and a recommendation; optional charts and a CSV of the recommended plan. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/order.h"
#include "tangram/report.h"
#include "tangram/schedule.h"
#include "tools/cli.h"
#include "tools/input.h"
#include "tools/place_cli.h"
#include "tools/range_cli.h"
#include "tools/speed_cli.h"

static void evaluate_usage(FILE *to) {
  fputs(
      "usage: tangram evaluate MODEL [options]\n"
      "\n"
      "MODEL is a .tflite or .onnx file, a text graph, or a usage-record CSV (then only the\n"
      "records' own storage is evaluated: 1D = buffer, 2D = texture_2d, 3D = texture_3d).\n"
      "\n"
      "For each storage (buffer, image_buffer, texture_2d, texture_array, texture_3d,\n"
      "single_texture_2d), each mode (objects; offsets, which for textures means their memory\n"
      "aliased in one arena) and each strategy plus best: bytes, the ratio to the lower bound,\n"
      "objects, planning time, validity and tensors that fall back to buffers. Then the best per\n"
      "storage and the one needing the least memory.\n"
      "\n"
      "options:\n"
      "  --precision fp32|fp16    element precision on the device (default fp32)\n"
      TG_CLI_RANGE_HELP
      "                           (evaluate: best per storage and mode; the range's worst ratio\n"
      "                           and its totals at both ends; --svg-dir: memory against size)\n"
      "  --policy NAME|all        serial (default), parallel-safe, branch-local, or all three side\n"
      "                           by side; non-serial policies need a graph\n"
      "  --no-limits              no device limits (default: limits every current mobile GPU\n"
      "                           meets; tensors beyond them fall back to buffers)\n"
      "  --max-allocation BYTES   the device's largest allocation (K, M, G suffixes): offsets\n"
      "                           rows plan several arenas of at most BYTES (JSON \"arenas\");\n"
      "                           rows with an object above it are skipped; a tensor above it\n"
      "                           is an error\n"
      "  --max-texture-size WxH[xL]  a smaller device: 2D and 3D textures at most W x H texels\n"
      "                           (and L array layers / 3D depth); a tensor beyond it falls back\n"
      "                           to the first that fits of texture_2d, image_buffer, buffer,\n"
      "                           each group planned in its storage (JSON \"fallbacks\", \"to\")\n"
      "  --no-fallback            storages where a tensor does not fit give skipped rows\n"
      "  --json                   one JSON object on stdout instead of the tables\n",
      to);
  fputs(TG_CLI_IN_PLACE_HELP
      "                           Without it, each best row still says what it would need\n"
      "                           with the pairs (JSON \"in_place_bytes\")\n"
      "  --svg-dir DIR            write a memory timeline (SVG) of each storage's best plan\n"
      "  --csv-out FILE           write the recommended plan, every tensor, as\n"
      "                           tensor_name,size,offset,start_time,end_time,object,storage\n"
      "  --reorder                serial policy only: search an op order with a smaller peak of\n"
      "                           live buffer bytes (off by default; see tangram plan --help) and\n"
      "                           evaluate every storage in that order (JSON key \"reorder\")\n"
      TG_CLI_SPEED_USAGE
      TG_CLI_PLACE_USAGE
      "                           (then: every storage and mode, best per space, against\n"
      "                           partition-by-partition planning)\n"
      "  -h, --help               this text\n"
      "\n"
      "Bytes: buffers in bytes; textures as texels x 16 (fp32) or 8 (fp16) bytes, plus the plans\n"
      "of their fallback groups. Bounds: objects mode = positional maximum, offsets =\n"
      "peak live.\n"
      "Exit status: 0 ok, 1 failure (including an invalid plan), 2 bad usage or input.\n",
      to);
}

#define MAX_POLICIES TG_POLICY_COUNT
#define FALLBACKS_SHOWN 8

typedef struct evaluate_args {
  const char *model_path;
  tg_precision precision;
  int all_policies;
  tg_policy policy;
  int no_limits;
  const char *texture_s;  /* --max-texture-size as given, or NULL */
  uint64_t tex_w, tex_h, tex_d;
  int no_fallback;
  int json;
  int reorder;
  int in_place;
  uint64_t max_allocation;
  const char *svg_dir;
  const char *csv_out;
  tg_cli_model_options shapes;
  tg_cli_range_options range;
  tg_cli_place_request place;
  tg_cli_speed_request speed;
  const tg_cli_speed *timed;   /* --speed: the timings */
} evaluate_args;

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* The file name without directory and extension, for chart names. */
static void stem_of(const char *path, char *buf, size_t size) {
  snprintf(buf, size, "%s", base_name(path));
  char *dot = strrchr(buf, '.');
  if (dot && dot != buf) *dot = '\0';
}

static void strategy_label(const tg_evaluation_result *r, char *buf, size_t size) {
  if (r->strategy == TG_STRATEGY_BEST) snprintf(buf, size, "best = %s", tg_strategy_name(r->winner));
  else snprintf(buf, size, "%s", tg_strategy_name(r->strategy));
}

static void time_label(uint64_t us, char *buf, size_t size) {
  if (us < 10000) snprintf(buf, size, "%llu us", (unsigned long long)us);
  else snprintf(buf, size, "%.1f ms", (double)us / 1000.0);
}

static double ratio_of(const tg_evaluation_result *r) {
  return r->lower_bound_bytes ? (double)r->bytes / (double)r->lower_bound_bytes : 1.0;
}

/* ------------------------------------------------------------------------------------------ */
/* Text. */

static void text_header(tg__strbuf *b, const evaluate_args *a, const tg_evaluation *ev) {
  if (ev->from_records) {
    tg__strbuf_printf(b, "%s: %zu usage records (%uD), %zu tasks; %s\n", a->model_path,
                      ev->record_count, ev->input_dims, ev->op_count, tg_precision_name(ev->precision));
    tg__strbuf_printf(b, "input is usage records: only their own storage (%s) is evaluated\n",
                      ev->input_dims == 1 ? "buffer" : ev->input_dims == 2 ? "texture_2d" : "texture_3d");
  } else {
    tg__strbuf_printf(b, "%s: %zu tensors, %zu ops, %zu planned tensors; %s", a->model_path,
                      ev->tensor_count, ev->op_count, ev->record_count, tg_precision_name(ev->precision));
    if (!a->all_policies) tg__strbuf_printf(b, "; policy %s", tg_policy_name(ev->policy));
    tg__strbuf_puts(b, a->no_limits ? "; no device limits\n" : "; default device limits\n");
  }
}

static void text_results(tg__strbuf *b, const tg_evaluation *ev) {
  tg__strbuf_printf(b, "\n%-18s %-8s %-30s %-10s %12s %10s %8s %8s %9s %5s %8s\n", "storage", "mode",
                    "strategy", "origin", "bytes", "", "x bound", "objects", "time", "valid", "fallback");
  int prev = -1;
  for (size_t i = 0; i < ev->result_count; ++i) {
    const tg_evaluation_result *r = &ev->results[i];
    if (prev != -1 && prev != (int)r->storage) tg__strbuf_puts(b, "\n");
    prev = (int)r->storage;
    char strat[64], human[32], time[32];
    strategy_label(r, strat, sizeof strat);
    int best = ev->best_of_storage[r->storage] == i;
    if (r->skipped) {
      tg__strbuf_printf(b, "%-18s %-8s %-30s %-10s skipped: %s\n", tg_storage_name(r->storage),
                        tg_mode_name(r->mode), strat, tg_strategy_origin(r->strategy), r->skip_reason);
      continue;
    }
    time_label(r->plan_us, time, sizeof time);
    tg__strbuf_printf(b, "%-18s %-8s %-30s %-10s %12llu %10s %8.3f %8zu %9s %5s %8zu%s\n",
                      tg_storage_name(r->storage), tg_mode_name(r->mode), strat,
                      tg_strategy_origin(r->strategy),
                      (unsigned long long)r->bytes, tg_report_format_bytes(r->bytes, human, sizeof human),
                      ratio_of(r), r->objects, time, r->valid ? "yes" : "NO", r->fallback_tensors,
                      best ? "  <- best" : "");
  }
}

/* Percent more (+) or less (-) than `base`, as "+74%"; empty when there is no base. */
static void versus(uint64_t bytes, uint64_t base, char *buf, size_t size) {
  if (base == 0) snprintf(buf, size, "%s", "");
  else snprintf(buf, size, "%+.0f%%", 100.0 * ((double)bytes / (double)base - 1.0));
}

static void text_best(tg__strbuf *b, const tg_evaluation *ev) {
  size_t buf_i = ev->best_of_storage[TG_STORAGE_BUFFER];
  const tg_evaluation_result *buf_obj = tg_cli_best_of_mode(ev, TG_STORAGE_BUFFER, TG_MODE_OBJECTS);
  tg__strbuf_printf(b, "\n%-98s%s\n", "best per storage:", "objects mode only (no aliasing):");
  for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
    size_t i = ev->best_of_storage[s];
    if (i == TG_EVALUATION_NONE) {
      if (!ev->from_records) tg__strbuf_printf(b, "  %-18s no valid plan\n", tg_storage_name((tg_storage)s));
      continue;
    }
    const tg_evaluation_result *r = &ev->results[i];
    char strat[64], human[32], vs[32];
    strategy_label(r, strat, sizeof strat);
    versus(r->bytes, (buf_i != TG_EVALUATION_NONE && s != TG_STORAGE_BUFFER) ? ev->results[buf_i].bytes : 0,
           vs, sizeof vs);
    tg__strbuf_printf(b, "  %-18s %-8s %-26s %10s %6.3f x bound %5s", tg_storage_name(r->storage),
                      tg_mode_name(r->mode), strat, tg_report_format_bytes(r->bytes, human, sizeof human),
                      ratio_of(r), vs);
    tg__strbuf_printf(b, " %-9s", "");
    const tg_evaluation_result *o = tg_cli_best_of_mode(ev, (tg_storage)s, TG_MODE_OBJECTS);
    if (o != NULL) {
      strategy_label(o, strat, sizeof strat);
      versus(o->bytes, (buf_obj && s != TG_STORAGE_BUFFER) ? buf_obj->bytes : 0, vs, sizeof vs);
      tg__strbuf_printf(b, "%10s %-26s %5s", tg_report_format_bytes(o->bytes, human, sizeof human), strat, vs);
    }
    if (r->fallback_tensors) tg__strbuf_printf(b, "  (%zu fallback tensors)", r->fallback_tensors);
    tg__strbuf_puts(b, "\n");
  }
  if (!ev->from_records) tg__strbuf_puts(b, "  (percentages: versus buffer's best in the same column)\n");
}

/* Long fused TFLite names ("a;b;c;...") would swamp the footnote: keep their start. */
static void short_name(const char *name, char *buf, size_t size) {
  if (name == NULL) name = "?";
  size_t len = strlen(name);
  if (len < size) snprintf(buf, size, "%s", name);
  else snprintf(buf, size, "%.*s...", (int)(size - 4), name);
}

static void text_fallbacks(tg__strbuf *b, const tg_evaluation *ev) {
  if (ev->fallback_count == 0) return;
  tg__strbuf_puts(b, "\nfallbacks: tensors that do not fit a storage are planned in the first storage of\n"
                    "texture_2d, image_buffer, buffer that fits them:\n");
  for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
    size_t n = 0;
    for (size_t j = 0; j < ev->fallback_count; ++j) n += ev->fallbacks[j].storage == (tg_storage)s;
    if (n == 0) continue;
    tg__strbuf_printf(b, "  %s: %zu tensor%s\n", tg_storage_name((tg_storage)s), n, n == 1 ? "" : "s");
    size_t shown = 0;
    for (size_t j = 0; j < ev->fallback_count && shown < FALLBACKS_SHOWN; ++j) {
      const tg_evaluation_fallback *f = &ev->fallbacks[j];
      if (f->storage != (tg_storage)s) continue;
      char name[72];
      short_name(f->name, name, sizeof name);
      tg__strbuf_printf(b, "    '%s' -> %s: %s\n", name, tg_storage_name(f->to), f->reason ? f->reason : "");
      ++shown;
    }
    if (n > shown) tg__strbuf_printf(b, "    ... and %zu more (--json lists all)\n", n - shown);
  }
}

/* The choice when textures cannot share one arena: the least objects-mode memory, compared
 * with the best texture (or buffer, when a texture wins). */
static void text_objects_recommendation(tg__strbuf *b, const tg_evaluation *ev) {
  if (ev->recommended_objects == TG_EVALUATION_NONE) return;
  const tg_evaluation_result *r = &ev->results[ev->recommended_objects];
  const tg_evaluation_result *o = NULL;
  int winner_is_texture = tg_storage_is_texture(r->storage);
  for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
    int texture = tg_storage_is_texture((tg_storage)s);
    if (winner_is_texture ? s != TG_STORAGE_BUFFER : !texture) continue;
    const tg_evaluation_result *c = tg_cli_best_of_mode(ev, (tg_storage)s, TG_MODE_OBJECTS);
    if (c && (o == NULL || c->bytes < o->bytes)) o = c;
  }
  char strat[64], human[32];
  strategy_label(r, strat, sizeof strat);
  tg__strbuf_printf(b, "without memory aliasing (objects mode only): %s objects (%s): %s",
                    tg_storage_name(r->storage), strat, tg_report_format_bytes(r->bytes, human, sizeof human));
  if (o != NULL && o->bytes > 0) {
    char ostrat[64];
    strategy_label(o, ostrat, sizeof ostrat);
    double pct = 100.0 * (1.0 - (double)r->bytes / (double)o->bytes);
    if (o->bytes == r->bytes)
      tg__strbuf_printf(b, ", the same as %s objects (%s", tg_storage_name(o->storage), ostrat);
    else if (pct >= 0.1)
      tg__strbuf_printf(b, ", %.*f%% less than %s objects (%s", pct < 1.0 ? 1 : 0, pct,
                        tg_storage_name(o->storage), ostrat);
    else
      tg__strbuf_printf(b, ", %llu bytes less than %s objects (%s", (unsigned long long)(o->bytes - r->bytes),
                        tg_storage_name(o->storage), ostrat);
    if (o->fallback_tensors)
      tg__strbuf_printf(b, "; %zu of %zu tensors fall back", o->fallback_tensors, ev->record_count);
    tg__strbuf_puts(b, ")");
  }
  tg__strbuf_puts(b, "\n");
}

/* What in place gives (or would give) for buffers and the recommended storage, by mode. */
static void text_in_place(tg__strbuf *b, const evaluate_args *a, const tg_evaluation *ev) {
  tg__strbuf_printf(b, "\nin place (%s): ", a->in_place ? "--in-place, on" : "off; --in-place would give");
  int first = 1;
  for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
    const int rec = ev->recommended != TG_EVALUATION_NONE && ev->results[ev->recommended].storage == (tg_storage)s;
    if (s != TG_STORAGE_BUFFER && !rec) continue;
    for (size_t i = 0; i < ev->result_count; ++i) {
      const tg_evaluation_result *r = &ev->results[i];
      if (r->storage != (tg_storage)s || r->strategy != TG_STRATEGY_BEST || r->skipped || !r->valid) continue;
      const tg_evaluation_result *plain = tg_cli_best_of_mode(ev, r->storage, r->mode);
      char h1[32], h2[32];
      tg__strbuf_printf(b, "%s%s %s %s", first ? "" : "; ", tg_storage_name(r->storage), tg_mode_name(r->mode),
                        tg_report_format_bytes(r->in_place_bytes, h2, sizeof h2));
      if (!a->in_place && plain && plain->bytes)
        tg__strbuf_printf(b, " instead of %s (%.1f%% less)", tg_report_format_bytes(plain->bytes, h1, sizeof h1),
                          100.0 * (1.0 - (double)r->in_place_bytes / (double)plain->bytes));
      tg__strbuf_printf(b, ", %zu pairs (%zu views)", r->in_place_pairs, r->in_place_views);
      first = 0;
    }
  }
  tg__strbuf_puts(b, first ? "no valid best plan\n" : "\n");
}

static void text_single(tg__strbuf *b, const evaluate_args *a, const tg_evaluation *ev) {
  text_header(b, a, ev);
  text_results(b, ev);
  tg__strbuf_puts(b, "\nbytes: textures = texels x bytes per texel, plus their fallback buffers' plan; "
                     "x bound: objects = positional max, offsets = peak live\n"
                     "offsets for a texture storage = its textures aliased in one memory arena "
                     "(Vulkan memory aliasing, OpenCL images from one buffer)\n");
  text_best(b, ev);
  char sentence[512];
  tg__strbuf_printf(b, "\n%s\n", tg_evaluation_describe(ev, sentence, sizeof sentence));
  text_objects_recommendation(b, ev);
  text_in_place(b, a, ev);
  text_fallbacks(b, ev);
}

static void text_policies(tg__strbuf *b, const evaluate_args *a, tg_evaluation *const *evs,
                          const tg_policy *policies, size_t n) {
  text_header(b, a, evs[0]);
  tg__strbuf_puts(b, "\nleast bytes per storage and mode, by reuse policy (each the best strategy):\n\n");
  tg__strbuf_printf(b, "%-18s %-8s", "storage", "mode");
  for (size_t p = 0; p < n; ++p) tg__strbuf_printf(b, " %16s", tg_policy_name(policies[p]));
  tg__strbuf_puts(b, "\n");
  for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
    for (int m = 0; m < 2; ++m) {
      int any = 0;
      for (size_t p = 0; p < n; ++p) any |= tg_cli_best_of_mode(evs[p], (tg_storage)s, (tg_mode)m) != NULL;
      if (!any) continue;
      tg__strbuf_printf(b, "%-18s %-8s", tg_storage_name((tg_storage)s), tg_mode_name((tg_mode)m));
      for (size_t p = 0; p < n; ++p) {
        const tg_evaluation_result *r = tg_cli_best_of_mode(evs[p], (tg_storage)s, (tg_mode)m);
        char human[32];
        tg__strbuf_printf(b, " %16s", r ? tg_report_format_bytes(r->bytes, human, sizeof human) : "-");
      }
      tg__strbuf_puts(b, "\n");
    }
  }
  tg__strbuf_puts(b, "\nrecommendation per policy:\n");
  for (size_t p = 0; p < n; ++p) {
    char sentence[512];
    tg__strbuf_printf(b, "  %-14s %s\n", tg_policy_name(policies[p]),
                      tg_evaluation_describe(evs[p], sentence, sizeof sentence));
  }
  text_fallbacks(b, evs[0]);
}

/* ------------------------------------------------------------------------------------------ */
/* JSON. */

static void json_result_fields(tg__strbuf *b, const tg_evaluation *ev, const tg_evaluation_result *r) {
  tg__strbuf_printf(b, "\"storage\":\"%s\",\"mode\":\"%s\",\"strategy\":\"%s\",\"origin\":\"%s\"",
                    tg_storage_name(r->storage), tg_mode_name(r->mode), tg_strategy_name(r->strategy),
                    tg_strategy_origin(r->strategy));
  if (r->strategy == TG_STRATEGY_BEST) tg__strbuf_printf(b, ",\"winner\":\"%s\"", tg_strategy_name(r->winner));
  if (r->mode == TG_MODE_OFFSETS && r->winner == TG_STRATEGY_GREEDY_IN_ORDER)
    tg__strbuf_printf(b, ",\"fit\":\"%s\"", tg_fit_name(r->fit));
  tg__strbuf_printf(b, ",\"policy\":\"%s\",\"bytes\":%llu,\"lower_bound_bytes\":%llu,\"ratio\":%.6f,"
                       "\"objects\":%zu,\"valid\":%s,\"plan_us\":%llu,\"fallback_tensors\":%zu",
                    tg_policy_name(ev->policy), (unsigned long long)r->bytes,
                    (unsigned long long)r->lower_bound_bytes, ratio_of(r), r->objects,
                    r->valid ? "true" : "false", (unsigned long long)r->plan_us, r->fallback_tensors);
  if (r->strategy == TG_STRATEGY_BEST)
    tg__strbuf_printf(b, ",\"in_place_bytes\":%llu,\"in_place_pairs\":%zu,\"in_place_views\":%zu",
                      (unsigned long long)r->in_place_bytes, r->in_place_pairs, r->in_place_views);
  if (r->mode == TG_MODE_OFFSETS)
    tg__strbuf_printf(b, ",\"arenas\":%zu,\"lower_bound\":{\"bytes\":%llu,\"source\":\"%s\"}", r->arenas,
                      (unsigned long long)r->offsets_bound_bytes, tg_bound_source_name(r->offsets_bound_source));
  if (!r->valid) {
    tg__strbuf_puts(b, ",\"invalid_reason\":");
    tg__strbuf_json_string(b, r->invalid_reason);
  }
}

static void json_recommendation(tg__strbuf *b, const tg_evaluation *ev) {
  if (ev->recommended == TG_EVALUATION_NONE) {
    tg__strbuf_printf(b, "{\"policy\":\"%s\",\"text\":\"no valid plan to recommend\"}", tg_policy_name(ev->policy));
    return;
  }
  const tg_evaluation_result *r = &ev->results[ev->recommended];
  tg__strbuf_puts(b, "{");
  json_result_fields(b, ev, r);
  size_t bi = ev->best_of_storage[TG_STORAGE_BUFFER];
  if (bi != TG_EVALUATION_NONE) {
    const tg_evaluation_result *br = &ev->results[bi];
    tg__strbuf_printf(b, ",\"buffer_bytes\":%llu,\"saving_vs_buffer_percent\":%.2f",
                      (unsigned long long)br->bytes,
                      br->bytes ? 100.0 * (1.0 - (double)r->bytes / (double)br->bytes) : 0.0);
  }
  char sentence[512];
  tg__strbuf_puts(b, ",\"text\":");
  tg__strbuf_json_string(b, tg_evaluation_describe(ev, sentence, sizeof sentence));
  tg__strbuf_puts(b, "}");
}

static void json_document(tg__strbuf *b, const evaluate_args *a, const tg_graph *graph,
                          tg_evaluation *const *evs, const tg_policy *policies, size_t n,
                          const tg_op_order *order) {
  const tg_evaluation *ev0 = evs[0];
  tg__strbuf_puts(b, "{\"model\":");
  tg__strbuf_json_string(b, a->model_path);
  tg_cli_json_assumed_inputs(b, graph);
  tg__strbuf_printf(b, ",\"input\":\"%s\",\"tensors\":%zu,\"ops\":%zu,\"records\":%zu,\"precision\":\"%s\"",
                    ev0->from_records ? "records" : "graph", ev0->tensor_count, ev0->op_count,
                    ev0->record_count, tg_precision_name(ev0->precision));
  if (ev0->from_records)
    tg__strbuf_printf(b, ",\"note\":\"usage records: only their own storage (%s) is evaluated\"",
                      ev0->input_dims == 1 ? "buffer" : ev0->input_dims == 2 ? "texture_2d" : "texture_3d");
  tg__strbuf_printf(b, ",\"policy\":\"%s\",\"limits\":\"%s\"",
                    a->all_policies ? "all" : tg_policy_name(policies[0]),
                    (a->no_limits || ev0->from_records) ? "none" : "default");
  if (a->texture_s && !ev0->from_records) {
    tg__strbuf_puts(b, ",\"max_texture_size\":");
    tg__strbuf_json_string(b, a->texture_s);
  }
  if (order) {
    tg__strbuf_printf(b, ",\"reorder\":{\"storage\":\"buffer\",\"original_peak\":%llu,\"peak\":%llu,"
                         "\"gain_pct\":%.3f,\"method\":\"%s\",\"optimal\":%s,\"lower_bound\":%llu,"
                         "\"elapsed_ms\":%.3f,\"op_order\":[",
                      (unsigned long long)order->original_peak, (unsigned long long)order->peak,
                      order->original_peak ? 100.0 * (1.0 - (double)order->peak / (double)order->original_peak) : 0.0,
                      tg_order_method_name(order->method), order->proved_optimal ? "true" : "false",
                      (unsigned long long)order->lower_bound, (double)order->elapsed_us / 1000.0);
    for (size_t k = 0; k < order->op_count; ++k) tg__strbuf_printf(b, "%s%u", k ? "," : "", order->order[k]);
    tg__strbuf_puts(b, "]}");
  }
  tg__strbuf_puts(b, ",\"results\":[");
  int first = 1;
  for (size_t p = 0; p < n; ++p)
    for (size_t i = 0; i < evs[p]->result_count; ++i) {
      const tg_evaluation_result *r = &evs[p]->results[i];
      if (r->skipped) continue;
      tg__strbuf_puts(b, first ? "{" : ",{");
      first = 0;
      json_result_fields(b, evs[p], r);
      tg_cli_speed_json_result(b, a->timed, evs[p], r);
      tg__strbuf_puts(b, "}");
    }
  tg__strbuf_puts(b, "],\"skipped\":[");
  first = 1;
  for (size_t p = 0; p < n; ++p)
    for (size_t i = 0; i < evs[p]->result_count; ++i) {
      const tg_evaluation_result *r = &evs[p]->results[i];
      if (!r->skipped) continue;
      tg__strbuf_printf(b, "%s{\"storage\":\"%s\",\"mode\":\"%s\",\"strategy\":\"%s\",\"policy\":\"%s\",\"reason\":",
                        first ? "" : ",", tg_storage_name(r->storage), tg_mode_name(r->mode),
                        tg_strategy_name(r->strategy), tg_policy_name(evs[p]->policy));
      tg__strbuf_json_string(b, r->skip_reason);
      tg__strbuf_puts(b, "}");
      first = 0;
    }
  tg__strbuf_puts(b, "],\"best_per_storage\":[");
  first = 1;
  for (size_t p = 0; p < n; ++p)
    for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
      size_t i = evs[p]->best_of_storage[s];
      if (i == TG_EVALUATION_NONE) continue;
      tg__strbuf_puts(b, first ? "{" : ",{");
      first = 0;
      json_result_fields(b, evs[p], &evs[p]->results[i]);
      tg_cli_speed_json_result(b, a->timed, evs[p], &evs[p]->results[i]);
      tg__strbuf_puts(b, "}");
    }
  tg__strbuf_printf(b, "],\"in_place_enabled\":%s", a->in_place ? "true" : "false");
  if (a->in_place) {
    /* The pairs of the recommended plan (record indices: its primary records, then fallbacks). */
    tg_report_view v;
    if (ev0->recommended != TG_EVALUATION_NONE && tg_evaluation_get_view(ev0, ev0->recommended, &v) == TG_OK)
      tg_cli_json_in_place(b, v.plan->in_place, v.plan->in_place_count);
    else
      tg_cli_json_in_place(b, NULL, 0);
  }
  tg__strbuf_puts(b, ",\"recommendation\":");
  json_recommendation(b, ev0);
  if (ev0->recommended_objects != TG_EVALUATION_NONE) {
    tg__strbuf_puts(b, ",\"recommendation_objects_mode\":{");
    json_result_fields(b, ev0, &ev0->results[ev0->recommended_objects]);
    tg__strbuf_puts(b, "}");
  }
  if (a->all_policies) {
    tg__strbuf_puts(b, ",\"recommendations\":[");
    for (size_t p = 0; p < n; ++p) {
      if (p) tg__strbuf_puts(b, ",");
      json_recommendation(b, evs[p]);
    }
    tg__strbuf_puts(b, "]");
  }
  tg__strbuf_puts(b, ",\"fallbacks\":[");
  for (size_t j = 0; j < ev0->fallback_count; ++j) {
    const tg_evaluation_fallback *f = &ev0->fallbacks[j];
    tg__strbuf_puts(b, j ? ",{\"tensor\":" : "{\"tensor\":");
    tg__strbuf_json_string(b, f->name);
    tg__strbuf_printf(b, ",\"tensor_index\":%u,\"storage\":\"%s\",\"to\":\"%s\",\"reason\":", f->tensor,
                      tg_storage_name(f->storage), tg_storage_name(f->to));
    tg__strbuf_json_string(b, f->reason);
    tg__strbuf_puts(b, "}");
  }
  tg__strbuf_puts(b, "]");
  if (a->timed) tg_cli_speed_json_top(b, a->timed);
  tg__strbuf_puts(b, "}\n");
}

/* ------------------------------------------------------------------------------------------ */
/* Charts and CSV. */

static int make_dir(const char *dir) {
  if (mkdir(dir, 0777) == 0 || errno == EEXIST) {
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return 1;
  }
  tg_cli_error("evaluate: cannot create directory %s: %s", dir, strerror(errno));
  return 0;
}

static int write_charts(const evaluate_args *a, const tg_evaluation *ev, const tg_allocator *alloc) {
  char stem[256];
  stem_of(a->model_path, stem, sizeof stem);
  for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
    size_t i = ev->best_of_storage[s];
    if (i == TG_EVALUATION_NONE) continue;
    const tg_evaluation_result *r = &ev->results[i];
    tg_report_view v;
    if (tg_evaluation_get_view(ev, i, &v) != TG_OK) continue;
    char strat[64], human[32], title[512], path[4096];
    strategy_label(r, strat, sizeof strat);
    snprintf(title, sizeof title, "%s: %s %s (%s), %s, %s policy: %s", base_name(a->model_path),
             tg_storage_name(r->storage), tg_mode_name(r->mode), strat,
             tg_precision_name(ev->precision), tg_policy_name(ev->policy),
             tg_report_format_bytes(r->bytes, human, sizeof human));
    if (r->fallback_tensors) {
      size_t len = strlen(title);
      snprintf(title + len, sizeof title - len, " (incl. %zu fallback buffers)", r->fallback_tensors);
    }
    if (ev->policy == TG_POLICY_SERIAL)
      snprintf(path, sizeof path, "%s/%s.%s.svg", a->svg_dir, stem, tg_storage_name(r->storage));
    else
      snprintf(path, sizeof path, "%s/%s.%s.%s.svg", a->svg_dir, stem, tg_policy_name(ev->policy),
               tg_storage_name(r->storage));
    char *svg = NULL;
    size_t len = 0;
    tg_status st = tg_report_render_view_svg(&v, title, alloc, &svg, &len);
    if (st != TG_OK) {
      tg_cli_error("evaluate: chart for %s: %s", tg_storage_name(r->storage), tg_status_string(st));
      return 0;
    }
    int ok = tg_cli_write_file(path, svg, len);
    tg_report_free(alloc, svg);
    if (!ok) return 0;
  }
  return 1;
}

static int write_csv(const char *path, const tg_evaluation *ev, const tg_allocator *alloc) {
  tg_report_view v;
  if (ev->recommended == TG_EVALUATION_NONE || tg_evaluation_get_view(ev, ev->recommended, &v) != TG_OK) {
    tg_cli_error("evaluate: no valid plan to write to %s", path);
    return 0;
  }
  char *csv = NULL;
  size_t len = 0;
  tg_status st = tg_report_build_csv(v.records, v.names, v.storage_of, v.count, 1, v.plan, 1, alloc,
                                     &csv, &len);
  if (st != TG_OK) {
    tg_cli_error("evaluate: CSV: %s", tg_status_string(st));
    return 0;
  }
  int ok = tg_cli_write_file(path, csv, len);
  tg_report_free(alloc, csv);
  return ok;
}

/* ------------------------------------------------------------------------------------------ */

/* --reorder: the op order with the smallest peak of live buffer bytes (at the chosen precision
 * and limits) and the graph in that order. */
static tg_status reorder_graph(const tg_graph *graph, const evaluate_args *a, const tg_allocator *alloc,
                               tg_op_order **order, tg_graph **reordered, tg_error_info *err) {
  tg_lifetimes *lt = NULL;
  tg_model_records *mr = NULL;
  uint64_t *sizes = NULL;
  tg_device_limits def = tg_device_limits_default();
  tg_status st = tg_graph_compute_lifetimes(graph, NULL, alloc, &lt, err);
  if (st == TG_OK)
    st = tg_model_records_create(graph, lt, TG_STORAGE_BUFFER, a->precision, a->no_limits ? NULL : &def,
                                 alloc, &mr, err);
  if (st == TG_OK) {
    sizes = tg__calloc(alloc, graph->tensor_count ? graph->tensor_count : 1, sizeof *sizes);
    if (sizes == NULL) st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
    for (size_t r = 0; sizes && r < mr->records->count; ++r) sizes[mr->tensor_of[r]] = mr->records->records[r].size.w;
  }
  if (st == TG_OK) st = tg_op_order_compute(graph, lt, sizes, NULL, alloc, order, err);
  if (st == TG_OK && (st = tg_graph_create_reordered(graph, (*order)->order, alloc, reordered)) != TG_OK) {
    tg__error(err, st, "reorder: %s", tg_status_string(st));
    tg_op_order_destroy(*order);
    *order = NULL;
  }
  tg__free(alloc, sizes);
  tg_model_records_destroy(mr);
  tg_lifetimes_destroy(lt);
  return st;
}

/* Returns 1 to go on, or 0 with the exit code in `*exit_code` (help printed, or bad usage). */
static int parse_args(int argc, char **argv, evaluate_args *a, int *exit_code) {
  memset(a, 0, sizeof *a);
  a->precision = TG_PRECISION_FP32;
  a->policy = TG_POLICY_SERIAL;
  a->shapes.ranges = 1;
  *exit_code = TG_EXIT_USAGE;
  for (int i = 1; i < argc;) {
    const char *v;
    int m;
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      evaluate_usage(stdout);
      *exit_code = TG_EXIT_OK;
      return 0;
    }
    if (strcmp(argv[i], "--json") == 0) { a->json = 1; ++i; continue; }
    if (strcmp(argv[i], "--no-limits") == 0) { a->no_limits = 1; ++i; continue; }
    if (strcmp(argv[i], "--no-fallback") == 0) { a->no_fallback = 1; ++i; continue; }
    if ((m = tg_cli_option(argc, argv, &i, "--max-texture-size", &v)) != 0) {
      if (m < 0) return 0;
      if (!tg_cli_parse_texture_size("evaluate", v, &a->tex_w, &a->tex_h, &a->tex_d)) return 0;
      a->texture_s = v;
      continue;
    }
    if (strcmp(argv[i], "--reorder") == 0) { a->reorder = 1; ++i; continue; }
    if (strcmp(argv[i], "--in-place") == 0) { a->in_place = 1; ++i; continue; }
    if ((m = tg_cli_input_shape_option(argc, argv, &i, &a->shapes)) != 0 ||
        (m = tg_cli_range_option(argc, argv, &i, &a->range)) != 0) {
      if (m < 0) return 0;
      continue;
    }
    if ((m = tg_cli_speed_option(argc, argv, &i, &a->speed)) != 0) {
      if (m < 0) return 0;
      continue;
    }
    if ((m = tg_cli_place_option(argc, argv, &i, &a->place)) != 0) {
      if (m < 0) return 0;
      continue;
    }
    if ((m = tg_cli_option(argc, argv, &i, "--precision", &v)) != 0) {
      if (m < 0) return 0;
      if (tg_precision_from_name(v, &a->precision) != TG_OK) {
        tg_cli_error("evaluate: --precision must be fp32 or fp16, not '%s'", v);
        return 0;
      }
      continue;
    }
    if ((m = tg_cli_option(argc, argv, &i, "--policy", &v)) != 0) {
      if (m < 0) return 0;
      if (strcmp(v, "all") == 0) {
        a->all_policies = 1;
      } else if (tg_policy_from_name(v, &a->policy) != TG_OK) {
        tg_cli_error("evaluate: --policy must be serial, parallel-safe, branch-local or all, not '%s'", v);
        return 0;
      }
      continue;
    }
    if ((m = tg_cli_option(argc, argv, &i, "--max-allocation", &v)) != 0) {
      if (m < 0) return 0;
      if (!tg_cli_parse_max_allocation("evaluate", v, &a->max_allocation)) return 0;
      continue;
    }
    if ((m = tg_cli_option(argc, argv, &i, "--svg-dir", &v)) != 0) {
      if (m < 0) return 0;
      a->svg_dir = v;
      continue;
    }
    if ((m = tg_cli_option(argc, argv, &i, "--csv-out", &v)) != 0) {
      if (m < 0) return 0;
      a->csv_out = v;
      continue;
    }
    if (argv[i][0] == '-' && argv[i][1] != '\0') {
      tg_cli_error("evaluate: unknown option '%s' (see tangram evaluate --help)", argv[i]);
      return 0;
    }
    if (a->model_path != NULL) {
      tg_cli_error("evaluate: more than one model ('%s' and '%s')", a->model_path, argv[i]);
      return 0;
    }
    a->model_path = argv[i++];
  }
  if (a->model_path == NULL) {
    evaluate_usage(stderr);
    return 0;
  }
  if (!tg_cli_speed_check(&a->speed)) return 0;
  if (a->speed.speed && (a->all_policies || a->policy != TG_POLICY_SERIAL || tg_cli_place_given(&a->place))) {
    tg_cli_error("evaluate: --speed times serial plans: it does not combine with --policy or --place");
    return 0;
  }
  if ((a->texture_s || a->no_fallback) && tg_cli_place_given(&a->place)) {
    tg_cli_error("evaluate: --max-texture-size and --no-fallback do not combine with --place");
    return 0;
  }
  if (a->texture_s && a->no_limits) {
    tg_cli_error("evaluate: --max-texture-size sets device limits: it does not combine with --no-limits");
    return 0;
  }
  if (a->reorder && (a->all_policies || a->policy != TG_POLICY_SERIAL)) {
    tg_cli_error("evaluate: --reorder works only with --policy serial");
    return 0;
  }
  return 1;
}

int tg_cli_evaluate(int argc, char **argv) {
  evaluate_args a;
  int exit_code;
  if (!parse_args(argc, argv, &a, &exit_code)) return exit_code;
  tg_device_limits range_limits = tg_device_limits_default();
  if (a.texture_s) tg_cli_limit_texture_size(&range_limits, a.tex_w, a.tex_h, a.tex_d);
  if (tg_cli_range_given(&a.shapes.options)) {
    tg_cli_evaluate_range_request rq = {
        a.model_path, &a.shapes.options, a.precision, a.policy, a.no_limits ? NULL : &range_limits, a.in_place,
        a.max_allocation, a.no_fallback, a.json, a.svg_dir,
        a.speed.speed ? "--speed" : tg_cli_place_given(&a.place) ? "--place" : a.all_policies ? "--policy all"
        : a.reorder ? "--reorder" : a.csv_out ? "--csv-out" : NULL, a.range};
    return tg_cli_evaluate_range(&rq);
  }
  if (a.range.sizes || a.range.own_time_s) {
    tg_cli_error("evaluate: --sizes and --own-time-limit go with a range of sizes (--input-shape LO..HI)");
    return TG_EXIT_USAGE;
  }
  if (tg_cli_place_given(&a.place)) {
    if (a.all_policies || a.reorder || a.svg_dir || a.csv_out) {
      tg_cli_error("evaluate: --place does not combine with --policy all, --reorder, --svg-dir or --csv-out");
      return TG_EXIT_USAGE;
    }
    a.place.model = a.model_path;
    a.place.model_options = &a.shapes.options;
    a.place.precision = a.precision;
    a.place.policy = a.policy;
    a.place.no_limits = a.no_limits;
    a.place.json = a.json;
    a.place.max_allocation = a.max_allocation;
    return tg_cli_place_evaluate(&a.place);
  }

  tg_failing_allocator fa;
  const tg_allocator *alloc = tg_cli_allocator(&fa);
  tg_error_info err = {{0}};
  tg_model *model = NULL;
  tg_status st = tg_cli_model_load(a.model_path, &a.shapes.options, alloc, 0, &model, &err);
  if (st != TG_OK) {
    tg_cli_error("%s", err.message[0] ? err.message : tg_status_string(st));
    return tg_cli_exit_code(st);
  }
  if ((model->kind == TG_MODEL_GRAPH && model->graph->tensor_count == 0) ||
      (model->kind == TG_MODEL_RECORDS && model->records->count == 0)) {
    tg_cli_error("%s: nothing to evaluate: expected a model or usage records", a.model_path);
    tg_model_destroy(model);
    return TG_EXIT_USAGE;
  }
  if (a.max_allocation > 0) {
    /* A tensor above the cap, as a buffer (its smallest form), fits no allocation. */
    tg_lifetimes *lt = NULL;
    tg_model_records *mr = NULL;
    const tg_record_set *set = model->kind == TG_MODEL_RECORDS ? model->records : NULL;
    if (set == NULL) {
      st = tg_graph_compute_lifetimes(model->graph, NULL, alloc, &lt, &err);
      if (st == TG_OK)
        st = tg_model_records_create(model->graph, lt, TG_STORAGE_BUFFER, a.precision, NULL, alloc, &mr, &err);
      if (st == TG_OK) set = mr->records;
    }
    int ok = st == TG_OK && (set->dims != 1 || tg_cli_check_max_allocation("evaluate", set, 0, a.max_allocation));
    if (st != TG_OK) tg_cli_error("evaluate: %s", err.message[0] ? err.message : tg_status_string(st));
    tg_model_records_destroy(mr);
    tg_lifetimes_destroy(lt);
    if (!ok) {
      tg_model_destroy(model);
      return st != TG_OK ? tg_cli_exit_code(st) : TG_EXIT_USAGE;
    }
  }
  tg_policy policies[MAX_POLICIES];
  size_t n = 0;
  if (a.all_policies) {
    for (int p = 0; p < TG_POLICY_COUNT; ++p) policies[n++] = (tg_policy)p;
  } else {
    policies[n++] = a.policy;
  }
  if (model->kind == TG_MODEL_RECORDS && (a.all_policies || a.policy != TG_POLICY_SERIAL)) {
    tg_cli_error("evaluate: %s holds usage records without a graph: only --policy serial applies",
                 a.model_path);
    tg_model_destroy(model);
    return TG_EXIT_USAGE;
  }

  tg_op_order *order = NULL;
  if (a.reorder) {
    if (model->kind != TG_MODEL_GRAPH) {
      tg_cli_error("evaluate: %s holds usage records without a graph: --reorder needs a model", a.model_path);
      tg_model_destroy(model);
      return TG_EXIT_USAGE;
    }
    tg_graph *reordered = NULL;
    st = reorder_graph(model->graph, &a, alloc, &order, &reordered, &err);
    if (st != TG_OK) {
      tg_cli_error("evaluate: %s", err.message[0] ? err.message : tg_status_string(st));
      tg_model_destroy(model);
      return tg_cli_exit_code(st);
    }
    tg_graph_destroy(model->graph);
    model->graph = reordered;
  }

  tg_evaluation *evs[MAX_POLICIES] = {NULL};
  tg_cli_speed *timed = NULL;
  int code = TG_EXIT_OK;
  for (size_t p = 0; p < n; ++p) {
    tg_evaluation_options opt;
    memset(&opt, 0, sizeof opt);
    opt.precision = a.precision;
    opt.policy = policies[p];
    opt.no_limits = a.no_limits;
    tg_device_limits limits = tg_device_limits_default();
    if (a.texture_s) {
      tg_cli_limit_texture_size(&limits, a.tex_w, a.tex_h, a.tex_d);
      opt.limits = &limits;
    }
    opt.no_fallback = a.no_fallback;
    opt.in_place = a.in_place;
    opt.max_allocation = a.max_allocation;
    err.message[0] = '\0';
    st = model->kind == TG_MODEL_GRAPH
             ? tg_evaluation_create_from_graph(model->graph, &opt, alloc, &evs[p], &err)
             : tg_evaluation_create_from_records(model->records, &opt, alloc, &evs[p], &err);
    if (st != TG_OK) {
      tg_cli_error("evaluate: %s", err.message[0] ? err.message : tg_status_string(st));
      code = tg_cli_exit_code(st);
      goto done;
    }
  }

  if (a.speed.speed) {
    if (model->kind != TG_MODEL_GRAPH) {
      tg_cli_error("evaluate: %s holds usage records without a graph: --speed needs a model", a.model_path);
      code = TG_EXIT_USAGE;
      goto done;
    }
    st = tg_cli_speed_run(&a.speed, model->graph, evs[0], a.max_allocation, alloc, &timed, &err);
    if (st != TG_OK) {
      tg_cli_error("evaluate --speed: %s", err.message[0] ? err.message : tg_status_string(st));
      code = tg_cli_exit_code(st);
      goto done;
    }
    a.timed = timed;
  }
  tg__strbuf out;
  tg__strbuf_init(&out, alloc);
  if (a.json) json_document(&out, &a, model->graph, evs, policies, n, order);
  else if (a.all_policies) text_policies(&out, &a, evs, policies, n);
  else text_single(&out, &a, evs[0]);
  if (!a.json && timed) tg_cli_speed_text(&out, timed);
  if (!a.json && order)
    tg__strbuf_printf(&out, "\nreorder: peak live buffer bytes %llu -> %llu (%.1f%% less), %s order%s, %.1f ms; "
                            "every storage above is evaluated in that order (--json: op_order)\n",
                      (unsigned long long)order->original_peak, (unsigned long long)order->peak,
                      order->original_peak ? 100.0 * (1.0 - (double)order->peak / (double)order->original_peak) : 0.0,
                      tg_order_method_name(order->method), order->proved_optimal ? ", proved optimal" : "",
                      (double)order->elapsed_us / 1000.0);
  code = tg_cli_print_report(&out, code);

  for (size_t p = 0; p < n; ++p)
    for (size_t i = 0; i < evs[p]->result_count; ++i) {
      const tg_evaluation_result *r = &evs[p]->results[i];
      if (r->skipped || r->valid) continue;
      tg_cli_error("evaluate: %s %s %s (%s policy) produced an invalid plan: %s",
                   tg_storage_name(r->storage), tg_mode_name(r->mode), tg_strategy_name(r->strategy),
                   tg_policy_name(evs[p]->policy), r->invalid_reason);
      code = TG_EXIT_FAILURE;
    }
  if (a.svg_dir) {
    if (!make_dir(a.svg_dir)) code = TG_EXIT_FAILURE;
    else
      for (size_t p = 0; p < n; ++p)
        if (!write_charts(&a, evs[p], alloc)) code = TG_EXIT_FAILURE;
    char stem[256];
    stem_of(a.model_path, stem, sizeof stem);
    if (timed && code == TG_EXIT_OK && !tg_cli_speed_svg(timed, a.svg_dir, stem, base_name(a.model_path), alloc))
      code = TG_EXIT_FAILURE;
  }
  if (a.csv_out && !write_csv(a.csv_out, evs[0], alloc)) code = TG_EXIT_FAILURE;

done:
  tg_cli_speed_free(timed);
  for (size_t p = 0; p < n; ++p) tg_evaluation_destroy(evs[p]);
  tg_op_order_destroy(order);
  tg_model_destroy(model);
  return code;
}
