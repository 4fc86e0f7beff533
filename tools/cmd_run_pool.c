/* `tangram run MODEL --runtime-pool POLICY`: no plan. Each tensor is allocated from a run-time
 * pool on the device when its producer runs and freed after its last reader; the placements
 * get the on-device check, and the pool's peak is set against the ahead-of-time plan's total
 * for the same model and storage: the price of not planning ahead. */
#include <stdio.h>
#include <string.h>

#include "pool/pool_internal.h"
#include "pool/pool_run.h"
#include "tangram/backend.h"
#include "tangram/pool.h"
#include "tangram/report.h"
#include "tools/cli.h"
#include "tools/input.h"

/* Everything the pooled run works on: primary and fallback records in one list. */
typedef struct pooled {
  tg_usage_record *records;
  tg_tensor_resource *res;
  uint64_t *bytes;
  uint32_t *tensor_of;        /* models: record -> tensor */
  const char **names;
  size_t count, primary;
  uint64_t alignment;
} pooled;

static void pooled_free(const tg_allocator *a, pooled *p) {
  tg__free(a, p->records);
  tg__free(a, p->res);
  tg__free(a, p->bytes);
  tg__free(a, p->tensor_of);
  tg__free(a, (void *)p->names);
  memset(p, 0, sizeof *p);
}

/* Resources of `set` in `storage` (1D sets: buffers of that many bytes), appended at `at`. */
static tg_status add_records(tg_device *dev, const tg_record_set *set, const uint32_t *tensor_of, tg_storage storage,
                             tg_precision precision, pooled *p, size_t at, tg_error_info *err) {
  uint64_t texel = tg_precision_texel_bytes(precision);
  for (size_t r = 0; r < set->count; ++r) {
    size_t k = at + r;
    p->records[k] = set->records[r];
    p->names[k] = set->names ? set->names[r] : NULL;
    if (tensor_of) p->tensor_of[k] = tensor_of[r];
    tg_tensor_resource *res = &p->res[k];
    if (set->dims == 1) {
      *res = (tg_tensor_resource){tg_storage_is_texture(storage) ? TG_STORAGE_BUFFER : storage, {set->records[r].size.w, 1, 1},
                                  set->records[r].size.w};
    } else {
      uint64_t v;
      res->storage = storage;
      res->extent = set->records[r].size;
      if (tg_extent_volume(res->extent, &v) != TG_OK || !tg__mul_u64(v, texel, &res->bytes))
        return tg__error(err, TG_ERROR_OVERFLOW, "record %zu: its size overflows 64 bits in bytes", r);
    }
    tg_resource_requirements req;
    tg_status st = tg_device_compute_requirements(dev, res, precision, &req);
    if (st != TG_OK) return tg__error(err, st, "record %zu: sizing it on the device failed: %s", r, tg_status_string(st));
    p->bytes[k] = req.size;
    if (!tg_storage_is_texture(res->storage) && req.alignment > p->alignment) p->alignment = req.alignment;
  }
  return TG_OK;
}

/* The ahead-of-time plan of one record set in `mode` (strategy `sg`), validated, in device
 * bytes: offsets, the arena (device sizes and alignments); objects, what each object takes
 * on the device. */
static tg_status plan_set(tg_device *dev, const tg_record_set *set, const tg_tensor_resource *res, tg_precision precision,
                          tg_mode mode, tg_strategy sg, const tg_allocator *alloc, uint64_t *total, tg_error_info *err) {
  *total = 0;
  tg_record_set *arena = NULL;
  const tg_record_set *planned = set;
  tg_status st = TG_OK;
  if (mode == TG_MODE_OFFSETS) {
    if ((st = tg_device_compute_arena_records(dev, res, set->records, set->count, precision, alloc, &arena)) != TG_OK)
      return tg__error(err, st, "plan: arena records: %s", tg_status_string(st));
    planned = arena;
  }
  tg_plan_options opt = {0};
  opt.mode = mode;
  opt.strategy = sg;
  tg_plan *plan = NULL;
  st = tg_plan_compute(planned->records, planned->count, planned->dims, &opt, alloc, &plan);
  if (st != TG_OK) {
    tg__error(err, st, "plan: %s %s failed: %s", tg_mode_name(mode), tg_strategy_name(sg), tg_status_string(st));
    goto done;
  }
  if ((st = tg_plan_validate(planned->records, planned->count, planned->dims, plan, 0, NULL, alloc, err)) != TG_OK) goto done;
  if (mode == TG_MODE_OFFSETS) {
    *total = plan->total;
  } else {
    for (size_t k = 0; k < plan->object_count; ++k) {
      tg_storage s = TG_STORAGE_BUFFER;
      for (size_t r = 0; r < set->count; ++r)
        if (plan->object_of[r] == k) s = res[r].storage;
      tg_tensor_resource obj = {s, plan->object_sizes[k], plan->object_sizes[k].w};
      uint64_t texels;
      if (tg_storage_is_texture(s) && (tg_extent_volume(obj.extent, &texels) != TG_OK ||
                          !tg__mul_u64(texels, tg_precision_texel_bytes(precision), &obj.bytes))) {
        st = tg__error(err, TG_ERROR_OVERFLOW, "plan: object %zu overflows", k);
        goto done;
      }
      tg_resource_requirements req;
      if ((st = tg_device_compute_requirements(dev, &obj, precision, &req)) != TG_OK) {
        tg__error(err, st, "plan: sizing object %zu failed: %s", k, tg_status_string(st));
        goto done;
      }
      if (!tg__add_u64(*total, req.size, total)) {
        st = tg__error(err, TG_ERROR_OVERFLOW, "plan: the total overflows 64 bits");
        goto done;
      }
    }
  }
done:
  tg_plan_destroy(plan);
  tg_record_set_destroy(arena);
  return st;
}

static void pool_usage_error(const char *what) {
  tg_cli_error("run: %s (see tangram run --help)", what);
}

int tg_cli_run_pool(int argc, char **argv) {
  const char *file = NULL, *backend_s = "auto", *device_s = NULL, *storage_s = "auto", *precision_s = "fp32";
  const char *mode_s = NULL, *strategy_s = "best", *policy_s = NULL, *capacity_s = NULL, *block_s = NULL;
  const char *texture_s = NULL;
  int json = 0, plan_io = 0, in_place = 0;
  tg_cli_model_options shapes;
  memset(&shapes, 0, sizeof shapes);
  for (int i = 1; i < argc;) {
    int m;
    if ((m = tg_cli_input_shape_option(argc, argv, &i, &shapes)) != 0) {
      if (m < 0) return TG_EXIT_USAGE;
      continue;
    }
    if (strcmp(argv[i], "--json") == 0) { json = 1; ++i; continue; }
    if (strcmp(argv[i], "--plan-io") == 0) { plan_io = 1; ++i; continue; }
    if (strcmp(argv[i], "--in-place") == 0) { in_place = 1; ++i; continue; }
    static const char *const k_opts[] = {"--backend", "--device", "--storage", "--precision", "--mode",
                                         "--strategy", "--runtime-pool", "--capacity", "--block-size",
                                         "--max-texture-size"};
    const char **k_targets[] = {&backend_s, &device_s, &storage_s, &precision_s, &mode_s,
                                &strategy_s, &policy_s, &capacity_s, &block_s, &texture_s};
    size_t o;
    if ((m = tg_cli_option_table(argc, argv, &i, k_opts, k_targets, sizeof k_opts / sizeof k_opts[0], &o)) != 0) {
      if (m < 0) return TG_EXIT_USAGE;
      continue;
    }
    if (argv[i][0] == '-' && argv[i][1] != '\0') {
      tg_cli_error("run: option '%s' does not apply with --runtime-pool (see tangram run --help)", argv[i]);
      return TG_EXIT_USAGE;
    }
    if (file) {
      tg_cli_error("run: more than one model ('%s' and '%s')", file, argv[i]);
      return TG_EXIT_USAGE;
    }
    file = argv[i++];
  }
  if (file == NULL) {
    pool_usage_error("no model given");
    return TG_EXIT_USAGE;
  }
  tg_pool_policy policy;
  if (policy_s == NULL || tg_pool_policy_from_name(policy_s, &policy) != TG_OK) {
    tg_cli_error("run: --runtime-pool must be exact, best-fit, first-fit or tlsf, not '%s'", policy_s ? policy_s : "");
    return TG_EXIT_USAGE;
  }
  uint64_t capacity = 0, block_size = 0, tex_w = 0, tex_h = 0, tex_d = 0;
  if (texture_s && !tg_cli_parse_texture_size("run", texture_s, &tex_w, &tex_h, &tex_d)) return TG_EXIT_USAGE;
  if (capacity_s && (!tg_cli_parse_u64(capacity_s, 1, &capacity) || capacity == 0)) {
    tg_cli_error("run: --capacity must be a positive byte count such as 314572800 or 300M, not '%s'", capacity_s);
    return TG_EXIT_USAGE;
  }
  if (block_s && !tg_cli_parse_u64(block_s, 1, &block_size)) {
    tg_cli_error("run: --block-size must be a byte count such as 1048576 or 1M, not '%s'", block_s);
    return TG_EXIT_USAGE;
  }
  if (block_size && policy == TG_POOL_EXACT) {
    tg_cli_error("run: --runtime-pool exact gives each tensor a block of its own size; --block-size applies to "
                 "best-fit, first-fit and tlsf");
    return TG_EXIT_USAGE;
  }
  tg_device_options dopt = {0};
  tg_precision precision;
  tg_strategy strategy;
  tg_mode mode = TG_MODE_OFFSETS;
  int auto_storage = strcmp(storage_s, "auto") == 0;
  tg_storage storage = TG_STORAGE_BUFFER;
  if (tg_backend_from_name(backend_s, &dopt.backend) != TG_OK) {
    tg_cli_error("run: --backend must be auto, vulkan, opencl or host, not '%s'", backend_s);
    return TG_EXIT_USAGE;
  }
  if (!auto_storage && tg_storage_from_name(storage_s, &storage) != TG_OK) {
    tg_cli_error("run: unknown --storage '%s'", storage_s);
    return TG_EXIT_USAGE;
  }
  if (tg_precision_from_name(precision_s, &precision) != TG_OK || tg_strategy_from_name(strategy_s, &strategy) != TG_OK ||
      (mode_s && tg_mode_from_name(mode_s, &mode) != TG_OK)) {
    tg_cli_error("run: bad --precision, --mode or --strategy (see tangram run --help)");
    return TG_EXIT_USAGE;
  }
  dopt.device = device_s;

  tg_failing_allocator fa;
  const tg_allocator *alloc = tg_cli_allocator(&fa);
  tg_error_info err = {{0}};
  tg_device *dev = NULL;
  tg_backend_skip skipped[TG_BACKEND_COUNT];
  size_t nskipped;
  int opened = tg_cli_open_device(&dopt, alloc, &dev, skipped, &nskipped, &err);
  if (opened != 0) return opened;
  tg_status st = TG_OK;
  const tg_device_info *info = tg_device_get_info(dev);

  int code = TG_EXIT_FAILURE;
  tg_cli_input in;
  memset(&in, 0, sizeof in);
  pooled pd;
  memset(&pd, 0, sizeof pd);
  tg_pool *pool = NULL;
  tg__pool_run run;
  memset(&run, 0, sizeof run);
  tg_realization *z = NULL;
  uint64_t *mismatches = NULL;
  tg__strbuf b;
  tg__strbuf_init(&b, alloc);

  /* Records: CSV records as they are (1D buffers; 2D/3D images of --storage, or texture_2d /
   * texture_array under auto); models in --storage (auto: buffer). */
  /* Tensors that do not fit fall along the chain; each group is pooled in its own storage. */
  tg_device_limits limits = info->limits;
  if (texture_s) tg_cli_limit_texture_size(&limits, tex_w, tex_h, tex_d);
  tg_cli_input_options io = {storage, precision, plan_io, &limits, &shapes.options, 0, 1};
  if ((st = tg_cli_input_load(file, &io, alloc, &in, &err)) != TG_OK) {
    tg_cli_error("%s", err.message[0] ? err.message : tg_status_string(st));
    code = tg_cli_exit_code(st);
    goto out;
  }
  const tg_record_set *set = in.records;
  if (in.graph == NULL && set->dims > 1) {
    if (auto_storage) storage = set->dims == 2 ? TG_STORAGE_TEXTURE_2D : TG_STORAGE_TEXTURE_ARRAY;
    if (tg_storage_dims(storage) != set->dims) {
      tg_cli_error("run: %s holds %uD records; --storage %s takes %uD records", file, set->dims, tg_storage_name(storage),
                   tg_storage_dims(storage));
      code = TG_EXIT_USAGE;
      goto out;
    }
  }
  if (in.graph == NULL && set->dims == 1 && tg_storage_is_texture(storage)) {
    tg_cli_error("run: %s holds byte sizes (1D records); --storage %s needs texel extents", file, tg_storage_name(storage));
    code = TG_EXIT_USAGE;
    goto out;
  }
  int image = tg_storage_is_texture(storage);
  if (image && !info->images) {
    tg_cli_error("run: %s: the %s device has no image support", tg_storage_name(storage), tg_backend_name(info->backend));
    code = TG_EXIT_FAILURE;
    goto out;
  }
  if (mode_s == NULL) mode = image ? TG_MODE_OBJECTS : TG_MODE_OFFSETS;
  if (mode == TG_MODE_OFFSETS && image && !info->arena_images) {
    tg_cli_error("run: this %s device cannot place images in an arena: plan textures with --mode objects",
                 tg_backend_name(info->backend));
    code = TG_EXIT_USAGE;
    goto out;
  }
  if (mode == TG_MODE_OFFSETS && (strategy == TG_STRATEGY_EQUALITY || strategy == TG_STRATEGY_MIN_COST_FLOW)) {
    tg_cli_error("run: strategy %s plans objects only: use --mode objects", tg_strategy_name(strategy));
    code = TG_EXIT_USAGE;
    goto out;
  }
  const size_t nfb = tg_model_records_fallback_count(in.model_records);
  pd.primary = set->count;
  pd.count = set->count + nfb;
  pd.alignment = 1;
  size_t n = pd.count ? pd.count : 1;
  pd.records = tg__calloc(alloc, n, sizeof *pd.records);
  pd.res = tg__calloc(alloc, n, sizeof *pd.res);
  pd.bytes = tg__calloc(alloc, n, sizeof *pd.bytes);
  pd.tensor_of = tg__calloc(alloc, n, sizeof *pd.tensor_of);
  pd.names = tg__calloc(alloc, n, sizeof *pd.names);
  if (!pd.records || !pd.res || !pd.bytes || !pd.tensor_of || !pd.names) {
    tg_cli_error("out of host memory");
    goto out;
  }
  st = add_records(dev, set, in.tensor_of, storage, precision, &pd, 0, &err);
  for (size_t g = 0, at = set->count; st == TG_OK && nfb && g < TG_STORAGE_FALLBACK_COUNT; ++g) {
    const tg_model_fallback *f = &in.model_records->fallbacks[tg_storage_fallback_at((uint32_t)g)];
    if (f->records == NULL || f->records->count == 0) continue;
    st = add_records(dev, f->records, f->tensor_of, tg_storage_fallback_at((uint32_t)g), precision, &pd, at, &err);
    at += f->records->count;
  }
  if (st != TG_OK) {
    tg_cli_error("run: %s", err.message);
    code = tg_cli_exit_code(st) == TG_EXIT_USAGE ? TG_EXIT_USAGE : TG_EXIT_FAILURE;
    goto out;
  }

  /* The ahead-of-time plan for the same records and storage (each fallback group in the same
   * mode when it is offsets, else in objects). */
  uint64_t plan_total = 0, fb_total = 0, t0 = tg__now_us();
  st = plan_set(dev, set, pd.res, precision, mode, strategy, alloc, &plan_total, &err);
  for (size_t g = 0, at = set->count; st == TG_OK && nfb && g < TG_STORAGE_FALLBACK_COUNT; ++g) {
    const tg_record_set *fs = in.model_records->fallbacks[tg_storage_fallback_at((uint32_t)g)].records;
    if (fs == NULL || fs->count == 0) continue;
    /* 2D groups: the strategy must plan their objects (else best). */
    tg_strategy fsg = mode == TG_MODE_OBJECTS && !tg_strategy_applies(strategy, mode, fs->dims) ? TG_STRATEGY_BEST
                                                                                              : strategy;
    st = plan_set(dev, fs, pd.res + at, precision, mode, fsg, alloc, &fb_total, &err);
    plan_total += fb_total;
    at += fs->count;
  }
  if (st != TG_OK) {
    tg_cli_error("run: %s", err.message);
    goto out;
  }
  uint64_t plan_us = tg__now_us() - t0;

  /* The pooled run. */
  tg_pool_options po = {policy, capacity, block_size, pd.alignment, precision, 1};
  if ((st = tg_pool_create(dev, &po, alloc, &pool, &err)) != TG_OK) {
    tg_cli_error("run: %s", err.message);
    code = tg_cli_exit_code(st);
    goto out;
  }
  t0 = tg__now_us();
  /* --in-place: a view (RESHAPE-like op over an input that dies there) allocates nothing. The
   * other pairs write over their input in kernels; the pool still gives them memory of their own. */
  uint64_t views = 0;
  st = tg__pool_run_records_views(pool, pd.records, pd.res, pd.bytes, pd.count, in_place ? in.in_place : NULL,
                                  in_place ? in.in_place_count : 0, alloc, &run, &views, &err);
  uint64_t pool_us = tg__now_us() - t0;
  if (st != TG_OK) {
    size_t r = run.failed_record;
    if (r != SIZE_MAX)
      tg_cli_error("run: runtime pool %s: op %u, tensor %s (record %zu): %s", tg_pool_policy_name(policy),
                   pd.records[r].first_task, pd.names[r] ? pd.names[r] : "(unnamed)", r, err.message);
    else
      tg_cli_error("run: runtime pool %s: %s", tg_pool_policy_name(policy), err.message);
    goto out;
  }
  tg_pool_stats ps;
  tg_pool_get_stats(pool, &ps);
  t0 = tg__now_us();
  if ((st = tg__pool_run_realize(dev, &run, pd.records, pd.res, precision, alloc, &z, &err)) != TG_OK) {
    tg_cli_error("run: placing the pooled tensors: %s", err.message);
    goto out;
  }
  mismatches = tg__calloc(alloc, n, sizeof *mismatches);
  if (mismatches == NULL) {
    tg_cli_error("out of host memory");
    goto out;
  }
  tg_check_desc cd = {in.graph, in.graph ? pd.tensor_of : NULL, 0, 0, NULL, NULL};
  tg_check_result result = {0, mismatches, 0};
  st = tg_realization_check(z, &cd, &result, &err);
  uint64_t check_us = tg__now_us() - t0;
  if (st != TG_OK) {
    tg_cli_error("run: %s", err.message[0] ? err.message : tg_status_string(st));
    goto out;
  }
  for (size_t r = 0; r < pd.count; ++r)
    if (mismatches[r])
      tg_cli_error("corrupted: %s (%llu mismatching words/texels)", pd.names[r] ? pd.names[r] : "(unnamed)",
                   (unsigned long long)mismatches[r]);

  double ratio = plan_total ? (double)ps.peak_reserved / (double)plan_total : 0.0;
  if (json) {
    tg__strbuf_puts(&b, "{\"model\":");
    tg__strbuf_json_string(&b, file);
    tg_cli_json_assumed_inputs(&b, in.graph);
    tg__strbuf_printf(&b, ",\"backend\":\"%s\",\"device\":", tg_backend_name(info->backend));
    tg__strbuf_json_string(&b, info->name);
    tg__strbuf_printf(&b,
                      ",\"device_kind\":\"%s\",\"storage\":\"%s\",\"precision\":\"%s\",\"records\":%zu,"
                      "\"fallback_tensors\":%zu,\"plan_mode\":\"%s\",\"plan_strategy\":\"%s\","
                      "\"pool_block_size\":%llu,\"pool_alignment\":%llu,"
                      "\"runtime_pool\":{\"policy\":\"%s\",\"capacity\":%llu,\"peak_reserved\":%llu,"
                      "\"peak_in_use\":%llu,\"plan_total\":%llu,\"ratio_to_plan\":%.4f,\"allocs\":%llu,"
                      "\"frees\":%llu,\"driver_allocations\":%llu,\"views\":%llu},"
                      "\"corrupted_tensors\":%llu,\"checked_bytes\":%llu,\"plan_us\":%llu,\"pool_us\":%llu,"
                      "\"check_us\":%llu,\"skipped\":[",
                      info->kind, tg_storage_name(storage), tg_precision_name(precision), pd.primary, nfb,
                      tg_mode_name(mode), tg_strategy_name(strategy), (unsigned long long)ps.block_size,
                      (unsigned long long)ps.alignment, tg_pool_policy_name(policy), (unsigned long long)ps.capacity,
                      (unsigned long long)ps.peak_reserved, (unsigned long long)ps.peak_in_use,
                      (unsigned long long)plan_total, ratio, (unsigned long long)ps.allocs,
                      (unsigned long long)ps.frees, (unsigned long long)ps.driver_allocations,
                      (unsigned long long)views, (unsigned long long)result.corrupted_records, (unsigned long long)result.checked_bytes,
                      (unsigned long long)plan_us, (unsigned long long)pool_us, (unsigned long long)check_us);
    tg_cli_json_skipped(&b, skipped, nskipped);
    tg__strbuf_puts(&b, "]}\n");
  } else {
    char b1[32], b2[32], b3[32], b4[32];
    tg__strbuf_printf(&b, "Tangram: %s\n", file);
    tg_cli_text_skipped(&b, skipped, nskipped);
    tg__strbuf_printf(&b, "  backend %s, device \"%s\" (%s)\n", tg_backend_name(info->backend), info->name, info->kind);
    tg__strbuf_printf(&b, "  storage %s %s, %zu tensors%s\n", tg_storage_name(storage), tg_precision_name(precision),
                      pd.primary, nfb ? " (plus fallback tensors)" : "");
    tg__strbuf_printf(&b, "  runtime pool %s: capacity %s, block size %s, alignment %llu\n\n",
                      tg_pool_policy_name(policy), tg_report_format_bytes(ps.capacity, b1, sizeof b1),
                      ps.block_size ? tg_report_format_bytes(ps.block_size, b2, sizeof b2) : "as requested",
                      (unsigned long long)ps.alignment);
    tg__strbuf_puts(&b, "Each tensor allocated when its producer runs, freed after its last reader:\n");
    tg__strbuf_printf(&b, "  peak reserved:       %s\n", tg_report_format_bytes(ps.peak_reserved, b1, sizeof b1));
    tg__strbuf_printf(&b, "  peak in use:         %s\n", tg_report_format_bytes(ps.peak_in_use, b2, sizeof b2));
    tg__strbuf_printf(&b, "  ahead-of-time plan:  %s (%s %s)\n", tg_report_format_bytes(plan_total, b3, sizeof b3),
                      tg_mode_name(mode), tg_strategy_name(strategy));
    tg__strbuf_printf(&b, "  pool / plan:         %.4f\n", ratio);
    tg__strbuf_printf(&b, "  allocations %llu, frees %llu, driver allocations %llu\n", (unsigned long long)ps.allocs,
                      (unsigned long long)ps.frees, (unsigned long long)ps.driver_allocations);
    if (in_place) tg__strbuf_printf(&b, "  views (--in-place, no allocation): %llu\n", (unsigned long long)views);
    tg__strbuf_puts(&b, "----------------------------------------\n");
    tg__strbuf_printf(&b, "On-device check (in order): %llu corrupted tensors, %s verified\n",
                      (unsigned long long)result.corrupted_records,
                      tg_report_format_bytes(result.checked_bytes, b4, sizeof b4));
    tg__strbuf_printf(&b, "Times: plan %.2f ms, pooled run %.2f ms, check %.2f ms\n", (double)plan_us / 1000.0,
                      (double)pool_us / 1000.0, (double)check_us / 1000.0);
  }
  if (b.failed) {
    tg_cli_error("out of memory");
    goto out;
  }
  fwrite(b.data, 1, b.length, stdout);
  code = result.corrupted_records ? TG_EXIT_FAILURE : TG_EXIT_OK;
out:
  tg__strbuf_free(&b);
  tg__free(alloc, mismatches);
  tg_realization_destroy(z);
  tg__pool_run_free(&run);
  tg_pool_destroy(pool);
  pooled_free(alloc, &pd);
  tg_cli_input_free(&in);
  tg_device_close(dev);
  return code;
}
