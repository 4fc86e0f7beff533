/* `tangram schedule`: the execution waves of a model, its critical path, and the waits that a
 * plan's memory reuse adds when independent branches run concurrently. */
#include <string.h>

#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/planner.h"
#include "tangram/report.h"
#include "tangram/schedule.h"
#include "tools/cli.h"
#include "tools/input.h"
#include "tools/place_cli.h"

static void schedule_usage(FILE *to) {
  fputs(
      "usage: tangram schedule MODEL [options]\n"
      "\n"
      "MODEL is a .tflite file or a text graph (a usage-record CSV has no graph to schedule).\n"
      "\n"
      "Shows the waves a parallel runtime may run (the ops of one wave do not depend on each\n"
      "other), the critical path, and the waits memory reuse adds on such a runtime: when a\n"
      "tensor takes memory that an op of a concurrent branch may still use, its producer must\n"
      "wait for that op (a reuse edge). A plan made under the serial policy may need them; plans\n"
      "made under parallel-safe or branch-local never do. See docs/scheduler.md.\n"
      "\n"
      "options:\n"
      "  --policy NAME            serial (default), parallel-safe or branch-local: the policy the\n"
      "                           plan is made under\n"
      "  --strategy NAME          planning strategy (default best)\n"
      "  --mode objects|offsets   shared objects (default) or offsets in one arena (1D storage)\n"
      "  --storage NAME           buffer (default), image_buffer, texture_2d, texture_array,\n"
      "                           texture_3d or single_texture_2d\n"
      "  --precision fp32|fp16    element precision on the device (default fp32)\n"
      "  --plan-io                graph inputs and outputs get memory from the plan too\n"
      TG_CLI_INPUT_SHAPE_HELP
      "  --all-ops                schedule ops that only compute constants too (by default they\n"
      "                           are folded: they run once at load time, outside the waves)\n"
      "  --json                   one JSON object on stdout instead of the tables\n"
      TG_CLI_PLACE_USAGE
      "                           (then: the waits between processors)\n"
      "  -h, --help               this text\n"
      "\n"
      "Exit status: 0 ok, 1 failure (including an invalid plan), 2 bad usage or input.\n",
      to);
}

typedef struct schedule_args {
  const char *model;
  tg_policy policy;
  tg_strategy strategy;
  tg_mode mode;
  tg_cli_input_options input;
  tg_cli_model_options shapes;
  int all_ops;
  int json;
  tg_cli_place_request place;
} schedule_args;

/* One policy's plan of the model: the primary records and, when some tensors do not fit the
 * storage, their fallback buffers. */
typedef struct policy_run {
  tg_plan *plan;
  tg_plan *fallback_plan;
  uint64_t total;           /* the primary plan's: bytes for buffers, texels for textures */
  uint64_t fallback_total;  /* bytes of the fallback buffers' plan (0 without fallbacks) */
  tg_waits *waits;
} policy_run;

static void policy_run_free(policy_run *r) {
  tg_plan_destroy(r->plan);
  tg_plan_destroy(r->fallback_plan);
  tg_waits_destroy(r->waits);
  memset(r, 0, sizeof *r);
}

static int parse_error(const char *what, const char *value, const char *choices) {
  tg_cli_error("schedule: %s must be %s, not '%s'", what, choices, value);
  return TG_EXIT_USAGE;
}

/* Returns -1 when the arguments are fine, else the exit code. */
static int parse_args(int argc, char **argv, schedule_args *a) {
  const char *policy_s = "serial", *strategy_s = "best", *mode_s = "objects";
  const char *storage_s = "buffer", *precision_s = "fp32";
  memset(a, 0, sizeof *a);
  for (int i = 1; i < argc;) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      schedule_usage(stdout);
      return TG_EXIT_OK;
    }
    if (strcmp(argv[i], "--json") == 0) { a->json = 1; ++i; continue; }
    if (strcmp(argv[i], "--plan-io") == 0) { a->input.plan_io = 1; ++i; continue; }
    if (strcmp(argv[i], "--all-ops") == 0) { a->all_ops = 1; ++i; continue; }
    int ms = tg_cli_input_shape_option(argc, argv, &i, &a->shapes);
    if (ms < 0) return TG_EXIT_USAGE;
    if (ms > 0) continue;
    int pm = tg_cli_place_option(argc, argv, &i, &a->place);
    if (pm < 0) return TG_EXIT_USAGE;
    if (pm > 0) continue;
    static const char *const k_options[] = {"--policy", "--strategy", "--mode", "--storage",
                                            "--precision"};
    const char **targets[] = {&policy_s, &strategy_s, &mode_s, &storage_s, &precision_s};
    int matched = 0;
    for (size_t o = 0; o < sizeof k_options / sizeof k_options[0] && !matched; ++o) {
      const char *v;
      int m = tg_cli_option(argc, argv, &i, k_options[o], &v);
      if (m < 0) return TG_EXIT_USAGE;
      if (m > 0) {
        *targets[o] = v;
        matched = 1;
      }
    }
    if (matched) continue;
    if (argv[i][0] == '-' && argv[i][1] != '\0') {
      tg_cli_error("schedule: unknown option '%s' (see tangram schedule --help)", argv[i]);
      return TG_EXIT_USAGE;
    }
    if (a->model != NULL) {
      tg_cli_error("schedule: more than one model ('%s' and '%s')", a->model, argv[i]);
      return TG_EXIT_USAGE;
    }
    a->model = argv[i++];
  }
  if (a->model == NULL) {
    schedule_usage(stderr);
    return TG_EXIT_USAGE;
  }
  a->input.model = &a->shapes.options;
  if (tg_policy_from_name(policy_s, &a->policy) != TG_OK)
    return parse_error("--policy", policy_s, "serial, parallel-safe or branch-local");
  if (tg_strategy_from_name(strategy_s, &a->strategy) != TG_OK)
    return parse_error("--strategy", strategy_s,
                       "naive, equality, greedy-in-order, greedy-by-breadth, greedy-by-size, "
                       "min-cost-flow, beam, allocation-tree, greedy-coloring, "
                       "greedy-by-conflicts, hill-climb or best");
  if (tg_mode_from_name(mode_s, &a->mode) != TG_OK)
    return parse_error("--mode", mode_s, "objects or offsets");
  if (tg_storage_from_name(storage_s, &a->input.storage) != TG_OK)
    return parse_error("--storage", storage_s,
                       "buffer, image_buffer, texture_2d, texture_array, texture_3d or "
                       "single_texture_2d");
  if (tg_precision_from_name(precision_s, &a->input.precision) != TG_OK)
    return parse_error("--precision", precision_s, "fp32 or fp16");
  if (!tg_strategy_applies(a->strategy, a->mode, 1))
    return parse_error("--strategy", strategy_s,
                       a->mode == TG_MODE_OFFSETS ? "one that exists in offsets mode"
                                                  : "one that exists in objects mode");
  if (a->mode == TG_MODE_OFFSETS && tg_storage_dims(a->input.storage) != 1)
    return parse_error("--mode", mode_s, "objects for texture storage (offsets need 1D records)");
  return -1;
}

/* Plan one record set under `policy` and validate the plan with the policy's relation. */
static tg_status plan_set(const schedule_args *a, const tg_schedule *s, tg_policy policy,
                          const tg_record_set *set, const uint32_t *tensor_of,
                          const tg_allocator *alloc, tg_plan **out, tg_error_info *err) {
  *out = NULL;
  tg_policy_relation *rel = NULL;
  tg_status st = tg_policy_relation_create(s, policy, tensor_of, set->count, alloc, &rel);
  if (st != TG_OK) return tg__error(err, st, "%s relation: %s", tg_policy_name(policy), tg_status_string(st));
  const tg_share_relation *relation = tg_policy_relation_get(rel);
  tg_plan_options opt = {0};
  opt.mode = a->mode;
  opt.strategy = a->strategy;
  opt.relation = relation;
  st = tg_plan_compute(set->records, set->count, set->dims, &opt, alloc, out);
  if (st != TG_OK) {
    tg__error(err, st, "planning (%s, %s, %s) failed: %s", tg_policy_name(policy),
              tg_strategy_name(a->strategy), tg_mode_name(a->mode), tg_status_string(st));
  } else {
    tg_error_info verr = {{0}};
    st = tg_plan_validate(set->records, set->count, set->dims, *out, 0, relation, alloc, &verr);
    if (st != TG_OK) {
      tg__error(err, st, "the %s plan is invalid: %s", tg_policy_name(policy), verr.message);
      tg_plan_destroy(*out);
      *out = NULL;
    }
  }
  tg_policy_relation_destroy(rel);
  return st;
}

/* The waits of the primary and fallback plans together: the fallback buffers are separate
 * memory, so their objects are numbered after the primary ones (offsets: placed after the
 * primary arena) and one computation sees both. */
static tg_status compute_waits(const tg_schedule *s, const tg_cli_input *in, policy_run *r,
                               const tg_allocator *alloc, tg_error_info *err) {
  const tg_model_records *mr = in->model_records;
  const tg_record_set *p = mr->records, *f = mr->fallback;
  size_t nf = (f && r->fallback_plan) ? f->count : 0;
  if (nf == 0)
    return tg_schedule_compute_waits(s, p->records, mr->tensor_of, p->count, r->plan, alloc,
                                     &r->waits, err);
  size_t n = p->count + nf;
  tg_status st = TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_usage_record *records = tg__calloc(alloc, n, sizeof *records);
  uint32_t *tensor_of = tg__calloc(alloc, n, sizeof *tensor_of);
  tg_plan *both = NULL;
  if (records == NULL || tensor_of == NULL) goto done;
  memcpy(records, p->records, p->count * sizeof *records);
  memcpy(records + p->count, f->records, nf * sizeof *records);
  memcpy(tensor_of, mr->tensor_of, p->count * sizeof *tensor_of);
  memcpy(tensor_of + p->count, mr->fallback_tensor_of, nf * sizeof *tensor_of);
  size_t objects = r->plan->object_count + r->fallback_plan->object_count;
  if ((st = tg_plan_create(r->plan->mode, 1, n, objects, alloc, &both)) != TG_OK) goto done;
  for (size_t i = 0; i < n; ++i) {
    int primary = i < p->count;
    const tg_plan *from = primary ? r->plan : r->fallback_plan;
    size_t j = primary ? i : i - p->count;
    if (both->mode == TG_MODE_OBJECTS)
      both->object_of[i] = from->object_of[j] + (primary ? 0 : (uint32_t)r->plan->object_count);
    else if (!tg__add_u64(from->offset_of[j], primary ? 0 : r->plan->total, &both->offset_of[i])) {
      st = TG_ERROR_OVERFLOW;
      goto done;
    }
  }
  st = tg_schedule_compute_waits(s, records, tensor_of, n, both, alloc, &r->waits, err);
done:
  if (st == TG_ERROR_OUT_OF_HOST_MEMORY) tg__error(err, st, "out of host memory");
  tg_plan_destroy(both);
  tg__free(alloc, records);
  tg__free(alloc, tensor_of);
  return st;
}

static tg_status run_policy(const schedule_args *a, const tg_schedule *s, const tg_cli_input *in,
                            tg_policy policy, const tg_allocator *alloc, policy_run *r,
                            tg_error_info *err) {
  memset(r, 0, sizeof *r);
  const tg_model_records *mr = in->model_records;
  tg_status st = plan_set(a, s, policy, mr->records, mr->tensor_of, alloc, &r->plan, err);
  if (st == TG_OK && mr->fallback && mr->fallback->count > 0)
    st = plan_set(a, s, policy, mr->fallback, mr->fallback_tensor_of, alloc, &r->fallback_plan, err);
  if (st == TG_OK) {
    r->total = r->plan->total;
    r->fallback_total = r->fallback_plan ? r->fallback_plan->total : 0;
  }
  if (st == TG_OK) st = compute_waits(s, in, r, alloc, err);
  if (st != TG_OK) policy_run_free(r);
  return st;
}

static const char *op_label(const tg_graph *g, size_t op) {
  return g->ops[op].name ? g->ops[op].name : "?";
}

static void text_report(tg__strbuf *b, const schedule_args *a, const tg_schedule *s,
                        const tg_cli_input *in, const policy_run *runs) {
  const tg_graph *g = in->graph;
  tg_schedule_stats st;
  tg_schedule_get_stats(s, &st);
  const char *unit = tg_storage_dims(a->input.storage) == 1 ? "B" : "texels";
  tg__strbuf_printf(b, "schedule of %s\n", a->model);
  tg__strbuf_printf(b, "  ops              %zu", st.op_count);
  if (st.folded_count)
    tg__strbuf_printf(b, " (%zu folded: they only compute constants, once, at load time)",
                      st.folded_count);
  tg__strbuf_printf(b, "\n  dependencies     %zu\n", st.edge_count);
  tg__strbuf_printf(b, "  waves            %zu (= the critical path, in ops)\n", st.wave_count);
  tg__strbuf_printf(b, "  max wave width   %zu\n", st.max_wave_width);
  tg__strbuf_printf(b, "  branches         %zu\n", st.branch_count);

  tg__strbuf_printf(b, "\nplans (%s, %s mode, %s storage, %s), and what each needs on a parallel runtime:\n",
                    tg_strategy_name(a->strategy), tg_mode_name(a->mode),
                    tg_storage_name(a->input.storage), tg_precision_name(a->input.precision));
  tg__strbuf_printf(b, "  %-14s %24s %12s %16s\n", "policy", "total", "reuse edges",
                    "critical path");
  for (int p = 0; p < TG_POLICY_COUNT; ++p) {
    const policy_run *r = &runs[p];
    char total[80], path[48];
    if (r->fallback_plan)
      snprintf(total, sizeof total, "%llu %s + %llu B", (unsigned long long)r->total, unit,
               (unsigned long long)r->fallback_total);
    else
      snprintf(total, sizeof total, "%llu %s", (unsigned long long)r->total, unit);
    snprintf(path, sizeof path, "%zu -> %zu", r->waits->critical_path,
             r->waits->critical_path_with_reuse);
    tg__strbuf_printf(b, "  %-14s %24s %12zu %16s%s\n", tg_policy_name((tg_policy)p), total,
                      r->waits->reuse_edge_count, path, p == (int)a->policy ? "   <- shown below" : "");
  }
  if (runs[a->policy].fallback_plan)
    tg__strbuf_printf(b, "  (+ B: tensors that do not fit %s, planned as plain buffers)\n",
                      tg_storage_name(a->input.storage));
  if (tg_storage_dims(a->input.storage) == 1 && !runs[a->policy].fallback_plan) {
    char human[32];
    tg__strbuf_printf(b, "  (%s: %s)\n", tg_policy_name(a->policy),
                      tg_report_format_bytes(runs[a->policy].total, human, sizeof human));
  }

  tg__strbuf_puts(b, "\nwaves (ops that may run at the same time):\n  wave  width  ops\n");
  for (size_t w = 0; w < st.wave_count; ++w) {
    size_t n = 0;
    const uint32_t *ops = tg_schedule_get_wave(s, w, &n);
    tg__strbuf_printf(b, "  %4zu  %5zu ", w, n);
    for (size_t i = 0; i < n; ++i) tg__strbuf_printf(b, " %u", ops[i]);
    tg__strbuf_puts(b, "\n");
  }

  const tg_waits *w = runs[a->policy].waits;
  tg__strbuf_printf(b, "\nreuse edges of the %s plan: %zu", tg_policy_name(a->policy),
                    w->reuse_edge_count);
  if (w->reuse_edge_count == 0) {
    tg__strbuf_printf(b, " (%zu pairs of tensors share memory, all already ordered by the graph)\n",
                      w->sharing_pairs);
    return;
  }
  tg__strbuf_printf(b, " (%zu of %zu pairs sharing memory are not ordered by the graph)\n"
                       "  the op writing TENSOR must wait for AFTER, which may still use REUSED:\n",
                    w->unsafe_pairs, w->sharing_pairs);
  for (size_t e = 0; e < w->reuse_edge_count; ++e) {
    const tg_reuse_edge *r = &w->reuse_edges[e];
    tg__strbuf_printf(b, "  op %u (%s) after op %u (%s): ", r->op, op_label(g, r->op), r->after,
                      op_label(g, r->after));
    tg__strbuf_json_string(b, g->tensors[r->tensor].name);
    tg__strbuf_puts(b, " reuses ");
    tg__strbuf_json_string(b, g->tensors[r->reuses].name);
    tg__strbuf_puts(b, "\n");
  }
  tg__strbuf_printf(b, "  critical path: %zu ops without them, %zu with them\n", w->critical_path,
                    w->critical_path_with_reuse);
}

/* The library's JSON, with the plan's facts and the policy comparison added at the end. */
static tg_status json_report(tg__strbuf *b, const schedule_args *a, const tg_schedule *s,
                             const tg_cli_input *in, const policy_run *runs,
                             const tg_allocator *alloc) {
  char *json = NULL;
  size_t len = 0;
  tg_status st = tg_schedule_build_json(s, in->graph, runs[a->policy].waits, alloc, &json, &len);
  if (st != TG_OK) return st;
  tg__strbuf_append(b, json, len - 1); /* without the closing brace */
  tg_schedule_free_json(alloc, json);
  const policy_run *r = &runs[a->policy];
  tg__strbuf_puts(b, ",\"model\":");
  tg__strbuf_json_string(b, a->model);
  tg__strbuf_printf(b,
                    ",\"policy\":\"%s\",\"strategy\":\"%s\",\"winner\":\"%s\",\"mode\":\"%s\","
                    "\"storage\":\"%s\",\"precision\":\"%s\",\"unit\":\"%s\",\"total\":%llu,"
                    "\"fallback_total\":%llu,\"sharing_pairs\":%zu,\"unsafe_pairs\":%zu,"
                    "\"policies\":[",
                    tg_policy_name(a->policy), tg_strategy_name(a->strategy),
                    tg_strategy_name(r->plan->strategy), tg_mode_name(a->mode),
                    tg_storage_name(a->input.storage), tg_precision_name(a->input.precision),
                    tg_storage_dims(a->input.storage) == 1 ? "bytes" : "texels",
                    (unsigned long long)r->total, (unsigned long long)r->fallback_total,
                    r->waits->sharing_pairs, r->waits->unsafe_pairs);
  for (int p = 0; p < TG_POLICY_COUNT; ++p)
    tg__strbuf_printf(b, "%s{\"policy\":\"%s\",\"total\":%llu,\"fallback_total\":%llu,"
                         "\"reuse_edges\":%zu,\"critical_path_with_reuse\":%zu}",
                      p ? "," : "", tg_policy_name((tg_policy)p), (unsigned long long)runs[p].total,
                      (unsigned long long)runs[p].fallback_total, runs[p].waits->reuse_edge_count,
                      runs[p].waits->critical_path_with_reuse);
  tg__strbuf_puts(b, "]}\n");
  return TG_OK;
}

int tg_cli_schedule(int argc, char **argv) {
  schedule_args a;
  int code = parse_args(argc, argv, &a);
  if (code >= 0) return code;
  if (tg_cli_place_given(&a.place)) {
    if (a.all_ops) {
      tg_cli_error("schedule: --place does not combine with --all-ops");
      return TG_EXIT_USAGE;
    }
    a.place.model = a.model;
    a.place.model_options = &a.shapes.options;
    a.place.storage = a.input.storage;
    a.place.precision = a.input.precision;
    a.place.mode = a.mode;
    a.place.strategy = a.strategy;
    a.place.policy = a.policy;
    a.place.plan_io = a.input.plan_io;
    a.place.json = a.json;
    return tg_cli_place_schedule(&a.place);
  }

  tg_failing_allocator fa;
  const tg_allocator *alloc = tg_cli_allocator(&fa);
  tg_error_info err = {{0}};
  tg_cli_input in;
  tg_status st = tg_cli_input_load(a.model, &a.input, alloc, &in, &err);
  if (st != TG_OK) {
    tg_cli_error("%s", err.message[0] ? err.message : tg_status_string(st));
    return tg_cli_exit_code(st);
  }
  policy_run runs[TG_POLICY_COUNT];
  memset(runs, 0, sizeof runs);
  tg_schedule *own = NULL;
  tg__strbuf out;
  tg__strbuf_init(&out, alloc);
  if (in.graph == NULL) {
    tg_cli_error("schedule: %s holds usage records, not a graph: there is nothing to schedule",
                 a.model);
    code = TG_EXIT_USAGE;
    goto done;
  }
  const tg_schedule *s = in.schedule;
  if (a.all_ops) {
    tg_schedule_options opt = {1};
    if ((st = tg_schedule_create(in.graph, &opt, alloc, &own, &err)) != TG_OK) {
      tg_cli_error("schedule: %s", err.message);
      code = tg_cli_exit_code(st);
      goto done;
    }
    s = own;
  }
  for (int p = 0; p < TG_POLICY_COUNT; ++p) {
    st = run_policy(&a, s, &in, (tg_policy)p, alloc, &runs[p], &err);
    if (st != TG_OK) {
      tg_cli_error("schedule: %s", err.message[0] ? err.message : tg_status_string(st));
      code = st == TG_ERROR_INVALID_PLAN ? TG_EXIT_FAILURE : tg_cli_exit_code(st);
      goto done;
    }
  }
  if (a.json) {
    if ((st = json_report(&out, &a, s, &in, runs, alloc)) != TG_OK) out.failed = 1;
  } else {
    text_report(&out, &a, s, &in, runs);
  }
  if (out.failed) {
    tg_cli_error("schedule: out of host memory");
    code = TG_EXIT_FAILURE;
    goto done;
  }
  code = fwrite(out.data, 1, out.length, stdout) == out.length ? TG_EXIT_OK : TG_EXIT_FAILURE;

done:
  tg__strbuf_free(&out);
  for (int p = 0; p < TG_POLICY_COUNT; ++p) policy_run_free(&runs[p]);
  tg_schedule_destroy(own);
  tg_cli_input_free(&in);
  return code;
}
