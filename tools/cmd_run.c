/* `tangram run`: the main job. Plan a model's memory, create it on a device, prove with the
 * shadow run that nothing is corrupted, and report what it cost. */
#include <string.h>

#include "tangram/backend.h"
#include "tangram/report.h"
#include "tangram/schedule.h"
#include "tools/cli.h"
#include "tools/input.h"
#include "tools/plan_file_cli.h"
#include "tools/place_cli.h"
#include "tools/run_plan.h"
#include "tools/run_range.h"

static void run_usage(FILE *to) {
  fputs(
      "usage: tangram run MODEL [options]\n"
      "\n"
      "Plans MODEL's intermediate tensors, allocates the plan on a device, runs the on-device\n"
      "check (every op verifies its inputs' signatures and writes its outputs'), and reports.\n"
      "\n"
      "options:\n"
      "  --backend auto|vulkan|opencl|host   (default auto: $TANGRAM_BACKEND, else the first of\n"
      "                                       vulkan, opencl, host that opens)\n"
      "  --device N|NAME          device index or name substring\n"
      "  --storage auto|buffer|image_buffer|texture_2d|texture_array|texture_3d|single_texture_2d\n"
      "                           (default auto: the least memory that fits the device)\n"
      "  --precision fp32|fp16    (default fp32)\n"
      "  --mode objects|offsets   shared objects (default) or one arena\n"
      "  --strategy NAME          planning strategy (default best)\n"
      "  --time-limit MS          strategy best: each plan within MS milliseconds (0 = no\n"
      "                           search; default 250, where the library's default is 10 ms of\n"
      "                           search; the search stops early once its plan meets a proved\n"
      "                           bound)\n"
      "  --policy serial|parallel-safe|branch-local   reuse policy (default serial; it holds in\n"
      "                           every fallback group too)\n"
      "  --budget BYTES           plan to fit this (K/M/G suffixes; default: the device's budget)\n"
      "  --max-texture-size WxH[xL]  simulate a smaller device: 2D and 3D textures at most\n"
      "                           W x H texels (and L array layers / 3D depth); a tensor beyond\n"
      "                           it falls back to the first that fits of texture_2d (from\n"
      "                           texture_array, texture_3d), image_buffer, buffer; each group\n"
      "                           is planned, realised and checked in its storage (JSON\n"
      "                           \"fallback_tensors\", \"fallbacks\", \"fallback_storages\";\n"
      "                           with --runtime-pool each group is pooled in its storage; not\n"
      "                           with --place)\n"
      "  --no-fallback            a tensor that does not fit the storage rules that storage out\n"
      "                           (with --storage S: exit 2 naming it)\n"
      "  --max-allocation BYTES   the largest single allocation (K/M/G suffixes; default and\n"
      "                           upper limit: the device's): offsets plans span several\n"
      "                           arenas of at most BYTES, one allocation each; a tensor or\n"
      "                           object above it is an error (exit 2)\n"
      "  --out-of-order           run the check with ops overlapping where the schedule allows\n"
      "                           (waits: graph edges, plus reuse edges for serial plans)\n"
      "  --no-reuse-edges         with --out-of-order: leave reuse edges out (to see the check\n"
      "                           refuse or catch an unsafe serial plan)\n"
      "  --plan-io                plan graph inputs and outputs too\n"
      "  --branch N               models with control flow: the check runs branch N of every If\n"
      "                           (0 then, 1 else; default 0)\n"
      "  --iterations N           ... and N iterations of every loop body (default 2), each\n"
      "                           iteration reading its inputs again as an engine runs it; with\n"
      "                           --out-of-order the ops of one iteration overlap where the\n"
      "                           schedule allows, and where the host decides (control-flow\n"
      "                           ops, the first op of a branch or loop subgraph) all before\n"
      "                           finish first\n",
      to);
  fputs(
      "  --in-place               elementwise ops may write over an input that dies there and\n"
      "                           RESHAPE-like ops are views (see tangram plan --help); with\n"
      "                           OpenCL, textures and image buffers get views only (OpenCL 1.2\n"
      "                           images are not read-write); JSON \"in_place\" lists the pairs\n"
      "                           used; with --runtime-pool, views allocate nothing (JSON\n"
      "                           \"views\")\n"
      "  --plan FILE              do not plan: load a plan file (`tangram plan MODEL --save FILE`),\n"
      "                           check it was made for MODEL's records (with the file's storage,\n"
      "                           precision, policy and --plan-io; giving other values is an\n"
      "                           error), realise it and run the check. A plan made for another\n"
      "                           model, one this device cannot hold, or one with an in-place\n"
      "                           pair --in-place would not use here: exit 2 with the reason\n"
      TG_CLI_INPUT_SHAPE_RANGE_HELP
      "                           With a range: one plan over it (docs/ranges.md), allocated once\n"
      "                           for the largest size asked, re-offset at each size and checked\n"
      "                           there; JSON \"range\": its \"sizes\", per size {dims, bytes,\n"
      "                           capacity, reoffset_us, corrupted, ...}. --plan FILE of a range:\n"
      "                           the file's sizes, or --input-shape at one size inside its range\n"
      "  --sizes A,B,...          with a range: the sizes run, each the dynamic dimensions in order\n"
      "                           joined by 'x' (320 or 320x640; default: both ends and six\n"
      "                           between); a size outside the range or off its step: exit 2\n"
      "  --grow                   with a range: allocate for the first size, and again (twice as\n"
      "                           large, or what the size needs) when a size outgrows it\n",
      to);
  fputs(
      "  --json                   one JSON object on stdout\n"
      "  --svg FILE               draw the realised plan as an SVG memory timeline\n"
      TG_CLI_PLACE_USAGE
      "                           (then CPU ops run on the host in the on-device check)\n"
      "  --runtime-pool exact|best-fit|first-fit|tlsf\n"
      "                           no plan: allocate each tensor from a run-time pool of this\n"
      "                           policy when its producer runs, free it after its last reader,\n"
      "                           check, and report the pool's peak next to the plan's total\n"
      "                           (--storage auto = buffer, --mode default offsets for buffers,\n"
      "                           objects for textures; CSV records work too)\n"
      "  --capacity BYTES         with --runtime-pool: the pool's capacity (K/M/G suffixes;\n"
      "                           default the device's budget); over it the run fails\n"
      "  --block-size BYTES       with --runtime-pool best-fit, first-fit or tlsf: least size of\n"
      "                           a new block (default 0: just the request that needs it)\n"
      "  -h, --help               this text\n"
      "\n"
      "Exit status: 0 ok, 1 failure (device error, corruption found, budget exceeded), 2 bad input\n"
      "(with --plan also: a plan for other records, over the budget or beyond the device's limits).\n",
      to);
}

typedef struct run_outcome {
  tg_realization_stats stats;
  uint64_t corrupted;
  uint64_t checked_bytes;
  uint64_t allocate_us, check_us;
  size_t reuse_edges;
} run_outcome;

/* Realise one plan, check it, release it. `names` for reporting corruption. */
static tg_status realise_and_check(tg_device *dev, const tg_cli_storage_plan *sp, const tg_record_set *set,
                                   const tg_record_set *planned, const tg_tensor_resource *res,
                                   const tg_plan *plan, const uint32_t *tensor_of, int ooo,
                                   int with_reuse, const uint32_t *flow, tg_precision precision,
                                   const tg_allocator *alloc, run_outcome *out, tg_error_info *err) {
  tg_realize_desc desc = {plan, planned->records, planned->count, planned->dims, res, precision, 0};
  tg_realization *z = NULL;
  uint64_t t0 = tg__now_us();
  tg_status st = tg_realization_create(dev, &desc, alloc, &z, err);
  out->allocate_us += tg__now_us() - t0;
  if (st != TG_OK) return st;
  tg_realization_stats stats;
  tg_realization_get_stats(z, &stats);
  out->stats.allocations += stats.allocations;
  out->stats.allocated_bytes += stats.allocated_bytes;
  out->stats.views += stats.views;
  uint64_t *mismatches = tg__calloc(alloc, set->count ? set->count : 1, sizeof *mismatches);
  tg_wait_lists *w = NULL;
  tg_waits *waits = NULL;
  uint32_t *order = NULL;
  size_t order_length = 0;
  if (mismatches == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  tg_check_desc cd = {sp->in.graph, tensor_of, 0, 0, NULL, NULL};
  /* Control flow: one execution with the chosen branch and iteration count (out of order too,
   * with the host deciding at every control-flow op). */
  if (sp->in.graph && sp->in.graph->flow_count > 0) {
    if ((st = tg_graph_run_order(sp->in.graph, flow[0], flow[1], alloc, &order, &order_length, err)) != TG_OK)
      goto done;
  }
  if (ooo && sp->in.schedule) {
    st = tg_schedule_compute_waits(sp->in.schedule, planned->records, tensor_of, planned->count,
                                   plan, alloc, &waits, err);
    if (st != TG_OK) goto done;
    out->reuse_edges += waits->reuse_edge_count;
    if ((st = tg_wait_lists_create(waits, with_reuse, alloc, &w)) != TG_OK) goto done;
    cd.out_of_order = 1;
    tg_check_desc_use_waits(&cd, w);
  }
  tg_check_result result = {0, mismatches, 0};
  t0 = tg__now_us();
  st = order ? tg_realization_check_run(z, &cd, order, order_length, &result, err)
             : tg_realization_check(z, &cd, &result, err);
  out->check_us += tg__now_us() - t0;
  if (st != TG_OK) goto done;
  out->corrupted += result.corrupted_records;
  out->checked_bytes += result.checked_bytes;
  for (size_t r = 0; r < set->count; ++r)
    if (mismatches[r])
      tg_cli_error("corrupted: %s (%llu mismatching words/texels)",
                   set->names[r] ? set->names[r] : "(unnamed)", (unsigned long long)mismatches[r]);
done:
  tg__free(alloc, order);
  tg_waits_destroy(waits);
  tg_wait_lists_destroy(w);
  tg__free(alloc, mismatches);
  tg_realization_destroy(z);
  return st;
}

static const tg_storage k_auto_storages[] = {TG_STORAGE_BUFFER, TG_STORAGE_TEXTURE_2D,
                                             TG_STORAGE_TEXTURE_ARRAY, TG_STORAGE_TEXTURE_3D,
                                             TG_STORAGE_IMAGE_BUFFER, TG_STORAGE_SINGLE_TEXTURE_2D};

int tg_cli_run(int argc, char **argv) {
  const char *file = NULL, *backend_s = "auto", *device_s = NULL, *storage_s = "auto";
  const char *precision_s = "fp32", *mode_s = "objects", *strategy_s = "best", *policy_s = "serial";
  const char *budget_s = NULL, *svg_out = NULL, *plan_path = NULL, *time_s = NULL, *cap_s = NULL, *texture_s = NULL;
  const char *sizes_s = NULL;
  int no_fallback = 0, grow = 0;
  int json = 0, ooo = 0, no_reuse = 0, plan_io = 0, in_place = 0;
  uint32_t flow[2] = {0, 2}; /* control flow in the check: branch, iterations */
  unsigned given = 0; /* bit o: option k_opts[o] was given */
  tg_cli_model_options shapes;
  memset(&shapes, 0, sizeof shapes);
  shapes.ranges = 1;
  tg_cli_place_request place;
  memset(&place, 0, sizeof place);
  int help = 0;
  for (int i = 1; i < argc; ++i) help |= strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0;
  if (help) {
    run_usage(stdout);
    return TG_EXIT_OK;
  }
  for (int i = 1; i < argc; ++i) {
    if (strncmp(argv[i], "--runtime-pool", 14) == 0 && (argv[i][14] == '\0' || argv[i][14] == '='))
      return tg_cli_run_pool(argc, argv);
    if (strcmp(argv[i], "--capacity") == 0 || strcmp(argv[i], "--block-size") == 0 ||
        strncmp(argv[i], "--capacity=", 11) == 0 || strncmp(argv[i], "--block-size=", 13) == 0) {
      tg_cli_error("run: %s applies to --runtime-pool (see tangram run --help)", argv[i]);
      return TG_EXIT_USAGE;
    }
  }
  for (int i = 1; i < argc;) {
    int m;
    if ((m = tg_cli_input_shape_option(argc, argv, &i, &shapes)) != 0) {
      if (m < 0) return TG_EXIT_USAGE;
      continue;
    }
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      run_usage(stdout);
      return TG_EXIT_OK;
    }
    if ((m = tg_cli_place_option(argc, argv, &i, &place)) != 0) {
      if (m < 0) return TG_EXIT_USAGE;
      continue;
    }
    if ((m = tg_cli_option(argc, argv, &i, "--sizes", &sizes_s)) != 0) {
      if (m < 0) return TG_EXIT_USAGE;
      continue;
    }
    if (strcmp(argv[i], "--grow") == 0) { grow = 1; ++i; continue; }
    if (strcmp(argv[i], "--json") == 0) { json = 1; ++i; continue; }
    if (strcmp(argv[i], "--out-of-order") == 0) { ooo = 1; ++i; continue; }
    if (strcmp(argv[i], "--no-reuse-edges") == 0) { no_reuse = 1; ++i; continue; }
    if (strcmp(argv[i], "--plan-io") == 0) { plan_io = 1; ++i; continue; }
    if (strcmp(argv[i], "--in-place") == 0) { in_place = 1; ++i; continue; }
    if ((strcmp(argv[i], "--branch") == 0 || strcmp(argv[i], "--iterations") == 0) && i + 1 < argc) {
      uint64_t v;
      if (!tg_cli_parse_u64(argv[i + 1], 0, &v) || v > 1000000) {
        tg_cli_error("run: %s takes a count up to 1000000, not '%s'", argv[i], argv[i + 1]);
        return 2;
      }
      flow[argv[i][2] == 'b' ? 0 : 1] = (uint32_t)v;
      i += 2;
      continue;
    }
    if (strcmp(argv[i], "--no-fallback") == 0) { no_fallback = 1; ++i; continue; }
    static const char *const k_opts[] = {"--backend", "--device", "--storage", "--precision",
                                         "--mode", "--strategy", "--policy", "--budget", "--svg", "--plan",
                                         "--time-limit", "--max-allocation", "--max-texture-size"};
    const char **k_targets[] = {&backend_s, &device_s, &storage_s, &precision_s,
                                &mode_s, &strategy_s, &policy_s, &budget_s, &svg_out, &plan_path,
                                &time_s, &cap_s, &texture_s};
    size_t o;
    if ((m = tg_cli_option_table(argc, argv, &i, k_opts, k_targets, sizeof k_opts / sizeof k_opts[0], &o)) != 0) {
      if (m < 0) return TG_EXIT_USAGE;
      given |= 1u << o;
      continue;
    }
    if (argv[i][0] == '-' && argv[i][1] != '\0') {
      tg_cli_error("run: unknown option '%s' (see tangram run --help)", argv[i]);
      return TG_EXIT_USAGE;
    }
    if (file) {
      tg_cli_error("run: more than one model ('%s' and '%s')", file, argv[i]);
      return TG_EXIT_USAGE;
    }
    file = argv[i++];
  }
  if (file == NULL) {
    run_usage(stderr);
    return TG_EXIT_USAGE;
  }
  tg_device_options dopt = {0};
  tg_precision precision;
  tg_mode mode;
  tg_strategy strategy;
  tg_policy policy;
  int auto_storage = strcmp(storage_s, "auto") == 0;
  tg_storage storage = TG_STORAGE_BUFFER;
  uint64_t budget = 0;
  if (tg_backend_from_name(backend_s, &dopt.backend) != TG_OK) {
    tg_cli_error("run: --backend must be auto, vulkan, opencl or host, not '%s'", backend_s);
    return TG_EXIT_USAGE;
  }
  if (!auto_storage && tg_storage_from_name(storage_s, &storage) != TG_OK) {
    tg_cli_error("run: unknown --storage '%s'", storage_s);
    return TG_EXIT_USAGE;
  }
  if (tg_precision_from_name(precision_s, &precision) != TG_OK ||
      tg_mode_from_name(mode_s, &mode) != TG_OK || tg_strategy_from_name(strategy_s, &strategy) != TG_OK ||
      tg_policy_from_name(policy_s, &policy) != TG_OK) {
    tg_cli_error("run: bad --precision, --mode, --strategy or --policy (see tangram run --help)");
    return TG_EXIT_USAGE;
  }
  if (budget_s && !tg_cli_parse_u64(budget_s, 1, &budget)) {
    tg_cli_error("run: --budget must be a byte count such as 8388608 or 8M, not '%s'", budget_s);
    return TG_EXIT_USAGE;
  }
  uint64_t time_limit = TG_CLI_RUN_TIME_LIMIT_MS;
  if (time_s && (!tg_cli_parse_u64(time_s, 0, &time_limit) || time_limit >= TG_TIME_LIMIT_NONE)) {
    tg_cli_error("run: --time-limit must be milliseconds (0 to 4294967294), not '%s'", time_s);
    return TG_EXIT_USAGE;
  }
  const uint32_t time_limit_ms = time_limit == 0 ? TG_TIME_LIMIT_NONE : (uint32_t)time_limit;
  uint64_t max_allocation = 0;
  if (cap_s && !tg_cli_parse_max_allocation("run", cap_s, &max_allocation)) return TG_EXIT_USAGE;
  uint64_t tex_w = 0, tex_h = 0, tex_d = 0;
  if (texture_s && !tg_cli_parse_texture_size("run", texture_s, &tex_w, &tex_h, &tex_d)) return TG_EXIT_USAGE;
  dopt.device = device_s;
  int ranged = sizes_s != NULL || grow || tg_cli_range_given(&shapes.options);
  /* What a run over a range (given here, or in a plan file) does not take (yet). */
  const char *not_over_range = tg_cli_place_given(&place) ? "--place" : svg_out ? "--svg" : ooo ? "--out-of-order"
                               : in_place ? "--in-place" : texture_s ? "--max-texture-size"
                               : cap_s ? "--max-allocation" : no_fallback ? "--no-fallback" : NULL;
  if (ranged && not_over_range != NULL) {
    tg_cli_error("run: %s does not combine with a range of sizes", not_over_range);
    return TG_EXIT_USAGE;
  }
  if (tg_cli_place_given(&place)) {
    if (svg_out) {
      tg_cli_error("run: --svg does not combine with --place");
      return TG_EXIT_USAGE;
    }
    if (texture_s || no_fallback) {
      /* Placement plans under the device's own limits, tensors that do not fit in buffers. */
      tg_cli_error("run: --max-texture-size and --no-fallback do not combine with --place");
      return TG_EXIT_USAGE;
    }
    place.model = file;
    place.model_options = &shapes.options;
    place.storage = storage;
    place.auto_storage = auto_storage;
    place.precision = precision;
    place.mode = mode;
    place.strategy = strategy;
    place.policy = policy;
    place.plan_io = plan_io;
    place.json = json;
    place.backend = backend_s;
    place.device = device_s;
    place.budget = budget;
    place.out_of_order = ooo;
    place.no_reuse_edges = no_reuse;
    place.max_allocation = max_allocation;
    return tg_cli_place_run(&place);
  }

  tg_failing_allocator fa;
  const tg_allocator *alloc = tg_cli_allocator(&fa);
  tg_error_info err = {{0}};
  tg_plan_file *pf = NULL;
  uint64_t load_us = 0; /* --plan: reading and decoding the file */
  if (plan_path) {
    /* The file fixes storage, precision, mode, strategy, policy and plan_io. */
    uint64_t t0 = tg__now_us();
    tg_status ls = tg_plan_file_load(plan_path, alloc, &pf, &err);
    load_us = tg__now_us() - t0;
    if (ls != TG_OK) {
      tg_cli_error("run: --plan: %s", err.message);
      return ls == TG_ERROR_OUT_OF_HOST_MEMORY ? TG_EXIT_FAILURE : TG_EXIT_USAGE;
    }
    const char *conflict = NULL, *asked = NULL, *mine = NULL;
    if ((given & 4u) && !auto_storage && storage != pf->storage)
      conflict = "--storage", asked = storage_s, mine = tg_storage_name(pf->storage);
    else if ((given & 8u) && precision != pf->precision)
      conflict = "--precision", asked = precision_s, mine = tg_precision_name(pf->precision);
    else if ((given & 16u) && mode != pf->plan->mode)
      conflict = "--mode", asked = mode_s, mine = tg_mode_name(pf->plan->mode);
    else if ((given & 32u) && strategy != pf->strategy)
      conflict = "--strategy", asked = strategy_s, mine = tg_strategy_name(pf->strategy);
    else if ((given & 64u) && policy != pf->policy)
      conflict = "--policy", asked = policy_s, mine = tg_policy_name(pf->policy);
    if (conflict)
      tg_cli_error("run: %s %s conflicts with the plan file %s, made with %s %s (leave the option out)", conflict,
                   asked, plan_path, conflict, mine);
    else if (plan_io && !(pf->flags & TG_PLAN_FILE_IO_PLANNED))
      tg_cli_error("run: --plan-io conflicts with the plan file %s, made without it", plan_path);
    if (conflict || (plan_io && !(pf->flags & TG_PLAN_FILE_IO_PLANNED))) {
      tg_plan_file_destroy(pf);
      return TG_EXIT_USAGE;
    }
    auto_storage = 0;
    storage = pf->storage;
    precision = pf->precision;
    mode = pf->plan->mode;
    strategy = pf->strategy;
    policy = pf->policy;
    plan_io = (pf->flags & TG_PLAN_FILE_IO_PLANNED) != 0;
    if (ranged && pf->range_records == NULL) {
      tg_cli_error("run: --plan %s holds a plan for one size: --input-shape at that size runs it (no range, "
                   "--sizes or --grow)", plan_path);
      tg_plan_file_destroy(pf);
      return TG_EXIT_USAGE;
    }
  }
  if (ranged || (pf && pf->range_records)) {
    if (pf && pf->range_records && not_over_range != NULL) {
      tg_cli_error("run: --plan %s holds a plan over a range of sizes: %s does not combine with it", plan_path,
                   not_over_range);
      tg_plan_file_destroy(pf);
      return TG_EXIT_USAGE;
    }
    tg_cli_run_range_args ra;
    memset(&ra, 0, sizeof ra);
    ra.file = file;
    ra.plan_path = plan_path;
    ra.plan_file = pf;
    ra.sizes = sizes_s;
    ra.grow = grow;
    ra.device = dopt;
    ra.storage = auto_storage ? TG_STORAGE_BUFFER : storage;
    ra.precision = precision;
    ra.mode = mode;
    ra.strategy = strategy;
    ra.policy = policy;
    ra.time_limit_ms = time_limit_ms;
    ra.plan_io = plan_io;
    ra.json = json;
    ra.flow[0] = flow[0];
    ra.flow[1] = flow[1];
    ra.budget = budget;
    ra.shapes = &shapes;
    int rc = tg_cli_run_range(&ra, alloc);
    tg_plan_file_destroy(pf);
    return rc;
  }
  {
    /* Model errors (an input shape missing, an op without shape inference) are the model's,
     * not a storage's: report them before trying storages. */
    tg_model *probe = NULL;
    tg_status ps = tg_cli_model_load(file, &shapes.options, alloc, 0, &probe, &err);
    tg_model_destroy(probe);
    if (ps != TG_OK) {
      tg_cli_error("%s", err.message[0] ? err.message : tg_status_string(ps));
      tg_plan_file_destroy(pf);
      return tg_cli_exit_code(ps);
    }
  }
  tg_device *dev = NULL;
  tg_backend_skip skipped[TG_BACKEND_COUNT];
  size_t nskipped;
  int opened = tg_cli_open_device(&dopt, alloc, &dev, skipped, &nskipped, &err);
  if (opened != 0) {
    tg_plan_file_destroy(pf);
    return opened;
  }
  tg_status st = TG_OK;
  const tg_device_info *info = tg_device_get_info(dev);
  if (budget == 0) budget = info->memory_budget;
  /* The limits: the device's, or a smaller device's textures (--max-texture-size). */
  tg_device_limits limits = info->limits;
  if (texture_s) tg_cli_limit_texture_size(&limits, tex_w, tex_h, tex_d);
  /* The cap: the device's largest allocation, or a smaller one asked for. */
  int cap_given = max_allocation != 0;
  if (info->max_allocation && (max_allocation == 0 || info->max_allocation < max_allocation))
    max_allocation = info->max_allocation;

  /* Choose: the requested storage, or (auto) each storage the device can hold, keeping the
   * least memory. Then if the plan exceeds the budget: the other strategies and the other mode. */
  tg_cli_storage_plan chosen;
  memset(&chosen, 0, sizeof chosen);
  int have = 0;
  char why_not[TG_ERROR_MESSAGE_MAX + 64] = "";
  size_t ncand = pf ? 0 : auto_storage ? sizeof k_auto_storages / sizeof k_auto_storages[0] : 1;
  if (pf) {
    tg_error_info perr = {{0}};
    st = tg_cli_storage_plan_from_file(dev, file, pf, plan_io, &shapes.options, max_allocation, &limits, alloc,
                                      &chosen, &perr);
    if (st == TG_OK && chosen.bytes > budget) {
      st = tg__error(&perr, TG_ERROR_BUDGET, "the plan needs %llu bytes, the budget is %llu (allocated nothing)",
                     (unsigned long long)chosen.bytes, (unsigned long long)budget);
      tg_cli_storage_plan_free(&chosen);
    }
    if (st != TG_OK) {
      tg_cli_error("run: %s: %s", plan_path, perr.message[0] ? perr.message : tg_status_string(st));
      tg_plan_file_destroy(pf);
      tg_device_close(dev);
      return st == TG_ERROR_OUT_OF_HOST_MEMORY || st == TG_ERROR_DEVICE || st == TG_ERROR_OUT_OF_DEVICE_MEMORY
                 ? TG_EXIT_FAILURE
                 : TG_EXIT_USAGE;
    }
    chosen.plan_us += load_us;
    have = 1;
  }
  for (size_t c = 0; c < ncand; ++c) {
    tg_storage s = auto_storage ? k_auto_storages[c] : storage;
    for (int attempt = 0; attempt < 2 * TG_STRATEGY_COUNT; ++attempt) {
      /* attempt 0: as asked; then every strategy in the asked mode; then in the other mode. */
      tg_mode m = attempt < TG_STRATEGY_COUNT ? mode : (mode == TG_MODE_OBJECTS ? TG_MODE_OFFSETS : TG_MODE_OBJECTS);
      tg_strategy sg = attempt == 0 ? strategy : (tg_strategy)((attempt - 1 + TG_STRATEGY_COUNT) % TG_STRATEGY_COUNT);
      if (attempt == TG_STRATEGY_COUNT) sg = strategy;
      if (attempt > 0 && attempt < TG_STRATEGY_COUNT && sg == strategy) continue;
      /* Strategies that do not plan this mode (or, objects mode, this storage's records). */
      if (!tg_strategy_applies(sg, m, m == TG_MODE_OBJECTS ? tg_storage_dims(s) : 1)) continue;
      tg_cli_storage_plan sp;
      tg_error_info perr = {{0}};
      st = tg_cli_storage_plan_build(dev, file, s, precision, m, sg, policy, plan_io, in_place, time_limit_ms,
                              &shapes.options, max_allocation, &limits, no_fallback, alloc, &sp, &perr);
      if (st == TG_ERROR_LIMIT && ((cap_given && strncmp(perr.message, "tensor ", 7) == 0) ||
                                   (no_fallback && !auto_storage && strstr(perr.message, "(--no-fallback)")))) {
        /* A tensor above the cap asked for fits no arena in any mode. */
        tg_cli_error("run: %s", perr.message);
        tg_cli_storage_plan_free(&chosen);
        tg_device_close(dev);
        return TG_EXIT_USAGE;
      }
      if (st == TG_ERROR_PARSE || st == TG_ERROR_IO || st == TG_ERROR_GRAPH || st == TG_ERROR_OUT_OF_HOST_MEMORY ||
          (st == TG_ERROR_INVALID_ARGUMENT && !auto_storage)) {
        tg_cli_error("%s", perr.message[0] ? perr.message : tg_status_string(st));
        tg_cli_storage_plan_free(&chosen);
        tg_device_close(dev);
        return tg_cli_exit_code(st);
      }
      if (st == TG_ERROR_LIMIT && strncmp(perr.message, "object ", 7) == 0) {
        /* An object above the cap: another strategy or the offsets mode may do. */
        snprintf(why_not, sizeof why_not, "%s: %s", tg_storage_name(s), perr.message);
        continue;
      }
      if (st != TG_OK) {
        snprintf(why_not, sizeof why_not, "%s: %s", tg_storage_name(s), perr.message);
        break; /* this storage cannot be used on this device */
      }
      if (sp.bytes > budget) {
        if (!have && (why_not[0] == '\0' || sp.bytes < chosen.bytes))
          snprintf(why_not, sizeof why_not, "%s %s %s needs %llu bytes, the budget is %llu",
                   tg_storage_name(s), tg_mode_name(sp.mode), tg_strategy_name(sg),
                   (unsigned long long)sp.bytes, (unsigned long long)budget);
        tg_cli_storage_plan_free(&sp);
        continue;
      }
      if (!have || sp.bytes < chosen.bytes) {
        tg_cli_storage_plan_free(&chosen);
        chosen = sp;
        have = 1;
      } else {
        tg_cli_storage_plan_free(&sp);
      }
      break; /* fits: no need to try other strategies for this storage */
    }
  }
  if (!have) {
    tg_cli_error("run: nothing fits: %s (allocated nothing)", why_not[0] ? why_not : "no storage is usable");
    tg_device_close(dev);
    return TG_EXIT_FAILURE;
  }

  /* Objects mode: the LP bound over objects, for the chosen plan only (it costs). */
  if (chosen.mode == TG_MODE_OBJECTS && !pf) tg_cli_storage_plan_lp_bound(&chosen, precision);
  run_outcome out;
  memset(&out, 0, sizeof out);
  const tg_record_set *set = chosen.in.records;
  st = realise_and_check(dev, &chosen, set, chosen.planned, chosen.resources, chosen.plan,
                         chosen.in.tensor_of, ooo, !no_reuse, flow, precision, alloc, &out, &err);
  for (int g = 0; st == TG_OK && g < TG_STORAGE_FALLBACK_COUNT; ++g) {
    const tg_cli_fallback_plan *fp = &chosen.fb[g];
    if (fp->plan == NULL) continue;
    const tg_record_set *fb = fp->group->records;
    st = realise_and_check(dev, &chosen, fb, fp->arena ? fp->arena : fb, fp->resources, fp->plan,
                           fp->group->tensor_of, ooo, !no_reuse, flow, precision, alloc, &out, &err);
  }
  size_t fallback_objects = 0;
  for (int g = 0; g < TG_STORAGE_FALLBACK_COUNT; ++g)
    if (chosen.fb[g].plan) fallback_objects += chosen.fb[g].plan->object_count;
  if (st != TG_OK) {
    tg_cli_error("run: %s", err.message[0] ? err.message : tg_status_string(st));
    int64_t native = tg_device_get_native_error(dev);
    if (native) tg_cli_error("run: the driver's last error code: %lld", (long long)native);
    tg_cli_storage_plan_free(&chosen);
    tg_device_close(dev);
    tg_plan_file_destroy(pf);
    if (pf && st == TG_ERROR_LIMIT) return TG_EXIT_USAGE; /* the plan holds more than this device can */
    return st == TG_ERROR_INVALID_PLAN ? TG_EXIT_FAILURE : (tg_cli_exit_code(st) == TG_EXIT_USAGE ? TG_EXIT_USAGE : TG_EXIT_FAILURE);
  }

  const tg_plan *p = chosen.plan;
  tg__strbuf b;
  tg__strbuf_init(&b, alloc);
  double saving = chosen.naive_bytes ? 100.0 * (1.0 - (double)chosen.bytes / (double)chosen.naive_bytes) : 0.0;
  double gap = chosen.lower_bound_bytes ? 100.0 * ((double)chosen.bytes / (double)chosen.lower_bound_bytes - 1.0) : 0.0;
  if (json) {
    tg__strbuf_puts(&b, "{\"model\":");
    tg__strbuf_json_string(&b, file);
    tg_cli_json_assumed_inputs(&b, chosen.in.graph);
    if (pf) {
      tg__strbuf_puts(&b, ",\"plan_file\":");
      tg__strbuf_json_string(&b, plan_path);
    }
    tg__strbuf_printf(&b, ",\"backend\":\"%s\",\"device\":", tg_backend_name(info->backend));
    tg__strbuf_json_string(&b, info->name);
    tg__strbuf_printf(&b,
                      ",\"device_kind\":\"%s\",\"storage\":\"%s\",\"precision\":\"%s\",\"mode\":\"%s\","
                      "\"strategy\":\"%s\",\"winner\":\"%s\",\"policy\":\"%s\",\"records\":%zu,"
                      "\"objects\":%zu,\"allocations\":%llu,"
                      "\"allocated_bytes\":%llu,\"planned_bytes\":%llu,\"naive_bytes\":%llu,"
                      "\"lower_bound_bytes\":%llu,\"gap_percent\":%.2f,\"saving_percent\":%.2f,"
                      "\"budget_bytes\":%llu,\"corrupted_tensors\":%llu,\"checked_bytes\":%llu,"
                      "\"out_of_order\":%s,\"reuse_edges\":%zu,\"plan_us\":%llu,\"allocate_us\":%llu,"
                      "\"check_us\":%llu,\"max_allocation\":%llu",
                      info->kind, tg_storage_name(chosen.storage), tg_precision_name(precision),
                      tg_mode_name(chosen.mode), tg_strategy_name(chosen.strategy),
                      tg_strategy_name(p->strategy), tg_policy_name(policy), set->count,
                      p->object_count + fallback_objects,
                      (unsigned long long)out.stats.allocations, (unsigned long long)out.stats.allocated_bytes,
                      (unsigned long long)chosen.bytes, (unsigned long long)chosen.naive_bytes,
                      (unsigned long long)chosen.lower_bound_bytes, gap, saving, (unsigned long long)budget,
                      (unsigned long long)out.corrupted, (unsigned long long)out.checked_bytes,
                      ooo ? "true" : "false", out.reuse_edges, (unsigned long long)chosen.plan_us,
                      (unsigned long long)out.allocate_us, (unsigned long long)out.check_us,
                      (unsigned long long)max_allocation);
    if (p->mode == TG_MODE_OFFSETS) tg_cli_json_arenas(&b, p, 0);
    tg_cli_json_fallbacks(&b, chosen.in.model_records);
    if (chosen.note) {
      tg__strbuf_puts(&b, ",\"note\":");
      tg__strbuf_json_string(&b, chosen.note);
    }
    tg_cli_json_in_place(&b, p->in_place, p->in_place_count);
    if (chosen.in.graph) {
      /* Per primary record: its tensor's shape in the model's own dimension order. */
      tg__strbuf_puts(&b, ",\"shape_of\":[");
      for (size_t r = 0; r < set->count; ++r) {
        const tg_tensor *t = &chosen.in.graph->tensors[chosen.in.tensor_of[r]];
        tg__strbuf_puts(&b, r ? ",[" : "[");
        for (uint32_t d = 0; d < t->rank; ++d) tg__strbuf_printf(&b, "%s%lld", d ? "," : "", (long long)t->shape[d]);
        tg__strbuf_puts(&b, "]");
      }
      tg__strbuf_puts(&b, "]");
    }
    tg__strbuf_puts(&b, ",\"skipped\":[");
    tg_cli_json_skipped(&b, skipped, nskipped);
    tg__strbuf_puts(&b, "]}\n");
  } else {
    char b1[32], b2[32], b3[32], b4[32];
    tg__strbuf_printf(&b, "Tangram: %s\n", file);
    tg_cli_text_skipped(&b, skipped, nskipped);
    tg__strbuf_printf(&b, "  backend %s, device \"%s\" (%s)\n", tg_backend_name(info->backend), info->name, info->kind);
    tg__strbuf_printf(&b, "  storage %s %s, mode %s, strategy %s (= %s), policy %s\n",
                      tg_storage_name(chosen.storage), tg_precision_name(precision), tg_mode_name(chosen.mode),
                      tg_strategy_name(chosen.strategy), tg_strategy_name(p->strategy), tg_policy_name(policy));
    if (chosen.note) tg__strbuf_printf(&b, "  note: %s\n", chosen.note);
    if (p->in_place_count) {
      size_t views = 0;
      for (size_t k = 0; k < p->in_place_count; ++k) views += p->in_place[k].view != 0;
      tg__strbuf_printf(&b, "  in place: %zu ops write over a dying input or are views (%zu views)\n",
                        p->in_place_count, views);
    }
    if (pf) tg__strbuf_printf(&b, "  plan loaded from %s (made for %s), checked against these records\n", plan_path, pf->source);
    tg__strbuf_puts(&b, "\n");
    if (p->mode == TG_MODE_OBJECTS) {
      tg__strbuf_printf(&b, "Shared objects: %zu\n", p->object_count);
      size_t shown = p->object_count < 12 ? p->object_count : 12;
      for (size_t k = 0; k < shown; ++k) {
        const tg_extent *e = &p->object_sizes[k];
        uint64_t bytes = p->dims == 1 ? e->w : e->w * e->h * e->d * tg_precision_texel_bytes(precision);
        size_t members = 0;
        for (size_t r = 0; r < set->count; ++r) members += p->object_of[r] == k;
        if (p->dims == 1) tg__strbuf_printf(&b, "  object %zu: %s, %zu tensors:", k, tg_report_format_bytes(bytes, b1, sizeof b1), members);
        else tg__strbuf_printf(&b, "  object %zu: %llux%llux%llu texels (%s), %zu tensors:", k,
                               (unsigned long long)e->w, (unsigned long long)e->h, (unsigned long long)e->d,
                               tg_report_format_bytes(bytes, b1, sizeof b1), members);
        size_t listed = 0;
        for (size_t r = 0; r < set->count && listed < 3; ++r)
          if (p->object_of[r] == k) {
            const char *nm = set->names[r] ? set->names[r] : "?";
            size_t len = strlen(nm);
            tg__strbuf_printf(&b, " %s%.*s", len > 40 ? "..." : "", 40, len > 40 ? nm + len - 40 : nm);
            ++listed;
          }
        tg__strbuf_puts(&b, members > listed ? " ...\n" : "\n");
      }
      if (shown < p->object_count) tg__strbuf_printf(&b, "  ... %zu more objects\n", p->object_count - shown);
    } else {
      if (p->arena_count > 1) {
        tg__strbuf_printf(&b, "%zu arenas (allocation cap %s) for %zu tensors:", p->arena_count,
                          tg_report_format_bytes(max_allocation, b1, sizeof b1), set->count);
        for (size_t k = 0; k < p->arena_count; ++k)
          tg__strbuf_printf(&b, "%s %s", k ? "," : "", tg_report_format_bytes(tg_plan_arena_size(p, k), b1, sizeof b1));
        tg__strbuf_puts(&b, "\n");
      } else {
        tg__strbuf_printf(&b, "One arena of %s for %zu tensors\n", tg_report_format_bytes(p->total, b1, sizeof b1), set->count);
      }
    }
    for (int g = 0; g < TG_STORAGE_FALLBACK_COUNT; ++g)
      if (chosen.fb[g].plan)
        tg__strbuf_printf(&b, "  + %zu tensors that do not fit %s, in %s\n", chosen.fb[g].group->records->count,
                          tg_storage_name(chosen.storage),
                          tg_storage_fallback_at((uint32_t)g) == TG_STORAGE_BUFFER ? "buffers"
                          : tg_storage_fallback_at((uint32_t)g) == TG_STORAGE_IMAGE_BUFFER ? "image buffers" : "2D textures");
    tg__strbuf_puts(&b, "----------------------------------------\n");
    tg__strbuf_printf(&b, "Original memory (one allocation per tensor): %s\n", tg_report_format_bytes(chosen.naive_bytes, b1, sizeof b1));
    tg__strbuf_printf(&b, "Optimised memory:                            %s\n", tg_report_format_bytes(chosen.bytes, b2, sizeof b2));
    tg__strbuf_printf(&b, "Memory saving:                               %.2f%%\n", saving);
    tg__strbuf_printf(&b, "Lower bound:                                 %s (gap %.2f%%)\n", tg_report_format_bytes(chosen.lower_bound_bytes, b3, sizeof b3), gap);
    tg__strbuf_printf(&b, "Allocations made: %llu, bytes allocated: %s (budget %s)\n",
                      (unsigned long long)out.stats.allocations, tg_report_format_bytes(out.stats.allocated_bytes, b4, sizeof b4),
                      tg_report_format_bytes(budget, b1, sizeof b1));
    tg__strbuf_printf(&b, "On-device check (%s): %llu corrupted tensors, %s verified%s\n",
                      ooo ? "out of order" : "in order", (unsigned long long)out.corrupted,
                      tg_report_format_bytes(out.checked_bytes, b2, sizeof b2),
                      ooo ? (no_reuse ? ", reuse edges left out" : "") : "");
    tg__strbuf_printf(&b, "Times: %s %.2f ms, allocate %.2f ms, check %.2f ms\n", pf ? "load + check plan" : "plan",
                      (double)chosen.plan_us / 1000.0, (double)out.allocate_us / 1000.0, (double)out.check_us / 1000.0);
  }
  int code = out.corrupted ? TG_EXIT_FAILURE : TG_EXIT_OK;
  if (svg_out) {
    /* The primary plan, in bytes: texture objects count texels of their precision. */
    uint64_t unit = (p->mode == TG_MODE_OBJECTS && p->dims > 1) ? tg_precision_texel_bytes(precision) : 1;
    char *svg = NULL;
    size_t svg_len = 0;
    char title[512];
    snprintf(title, sizeof title, "%s: %s %s, %s", file, tg_storage_name(chosen.storage),
             tg_mode_name(chosen.mode), tg_strategy_name(p->strategy));
    tg_status ss = tg_report_render_svg(chosen.planned->records, (const char *const *)set->names,
                                        chosen.planned->count, chosen.planned->dims, p,
                                        chosen.lower_bound_bytes / unit, unit, title, alloc, &svg, &svg_len);
    if (ss != TG_OK || !tg_cli_write_file(svg_out, svg, svg_len)) {
      if (ss != TG_OK) tg_cli_error("run: drawing %s failed: %s", svg_out, tg_status_string(ss));
      code = TG_EXIT_FAILURE;
    }
    tg_report_free(alloc, svg);
  }
  code = tg_cli_print_report(&b, code);
  tg_cli_storage_plan_free(&chosen);
  tg_device_close(dev);
  tg_plan_file_destroy(pf);
  return code;
}
