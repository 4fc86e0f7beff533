#include "tools/plan_file_cli.h"

#include <stdio.h>

void tg_cli_fingerprint_hex(const uint8_t fp[TG_FINGERPRINT_BYTES], char hex[2 * TG_FINGERPRINT_BYTES + 1]) {
  for (int i = 0; i < TG_FINGERPRINT_BYTES; ++i) snprintf(hex + 2 * i, 3, "%02x", fp[i]);
}

/* Save `d` (plan, records, names, count, dims and range given) with the rest from `io` and the
 * arguments; prints the reason on failure. */
static int save(const char *path, tg_plan_file_desc *d, const tg_cli_input_options *io, tg_policy policy,
                tg_strategy strategy, uint64_t alignment, const char *source, const tg_allocator *alloc,
                char hex[2 * TG_FINGERPRINT_BYTES + 1]) {
  d->storage = io->storage;
  d->precision = io->precision;
  d->policy = policy;
  d->strategy = strategy;
  d->alignment = alignment;
  d->flags = io->plan_io ? TG_PLAN_FILE_IO_PLANNED : 0;
  d->source = source;
  /* The limits the records were made under (the input's, else the default ones). */
  tg_device_limits def = tg_device_limits_default();
  d->limits = io->limits ? io->limits : &def;
  tg_error_info err = {{0}};
  tg_status st = tg_plan_file_save(d, path, alloc, &err);
  if (st != TG_OK) {
    tg_cli_error("plan: --save: %s", err.message);
    return st == TG_ERROR_IO || st == TG_ERROR_OUT_OF_HOST_MEMORY ? TG_EXIT_FAILURE : tg_cli_exit_code(st);
  }
  uint8_t fp[TG_FINGERPRINT_BYTES];
  tg_records_fingerprint(d->records, d->names, d->record_count, d->dims, fp);
  tg_cli_fingerprint_hex(fp, hex);
  return TG_EXIT_OK;
}

int tg_cli_plan_save(const char *path, const tg_cli_input *in, const char *source,
                     const tg_cli_input_options *io, tg_policy policy, tg_strategy strategy,
                     uint64_t alignment, const tg_plan *plan, const tg_allocator *alloc,
                     char hex[2 * TG_FINGERPRINT_BYTES + 1]) {
  const tg_record_set *set = in->records;
  const tg_model_records *mr = in->model_records;
  if (tg_model_records_fallback_count(mr)) {
    tg_storage to = TG_STORAGE_BUFFER;
    const tg_model_fallback *f = tg_cli_first_fallback(mr, &to);
    tg_cli_error("plan: --save: %zu tensors do not fit %s under the device limits and fall back to other "
                 "storages (first: %s, to %s: %s); a plan file holds one storage: choose another --storage",
                 tg_model_records_fallback_count(mr), tg_storage_name(io->storage),
                 f->records->names[0] ? f->records->names[0] : "?", tg_storage_name(to), f->reasons[0]);
    return TG_EXIT_USAGE;
  }
  tg_storage storage = io->storage;
  if (tg_storage_dims(storage) != set->dims) {
    tg_cli_error("plan: --save: these records are %uD; --storage %s gives %uD records (%s)", set->dims,
                 tg_storage_name(storage), tg_storage_dims(storage),
                 set->dims == 1 ? "use buffer or image_buffer"
                 : set->dims == 2 ? "use texture_2d or single_texture_2d"
                                  : "use texture_array or texture_3d");
    return TG_EXIT_USAGE;
  }
  tg_plan_file_desc d = {0};
  d.plan = plan;
  d.records = set->records;
  d.names = (const char *const *)set->names;
  d.record_count = set->count;
  d.dims = set->dims;
  return save(path, &d, io, policy, strategy, alignment, source, alloc, hex);
}

tg_status tg_cli_plan_file_check_device(const tg_plan_file *file, uint64_t max_allocation,
                                        const tg_device_limits *limits, tg_error_info *err) {
  const tg_plan *p = file->plan;
  if (max_allocation > 0 && p->mode == TG_MODE_OFFSETS) {
    size_t arenas = p->arena_count > 1 ? p->arena_count : 1;
    for (size_t k = 0; k < arenas && p->record_count > 0; ++k) {
      uint64_t bytes = tg_plan_arena_size(p, k);
      if (bytes > max_allocation)
        return tg__error(err, TG_ERROR_LIMIT,
                         "allocation cap: arena %zu of the plan takes %llu bytes (planned under %s%llu), this "
                         "device allows %llu in one allocation (plan with --max-allocation %llu)",
                         k, (unsigned long long)bytes, p->max_allocation ? "a cap of " : "no cap",
                         (unsigned long long)(p->max_allocation ? p->max_allocation : 0ull),
                         (unsigned long long)max_allocation, (unsigned long long)max_allocation);
    }
  }
  if (!file->has_limits || limits == NULL) return TG_OK;
  const struct {
    const char *name;
    uint64_t planned, device;
  } k_limits[] = {
      {"max_buffer_bytes", file->limits.max_buffer_bytes, limits->max_buffer_bytes},
      {"max_image_buffer_texels", file->limits.max_image_buffer_texels, limits->max_image_buffer_texels},
      {"max_texture_2d_width", file->limits.max_texture_2d_width, limits->max_texture_2d_width},
      {"max_texture_2d_height", file->limits.max_texture_2d_height, limits->max_texture_2d_height},
      {"max_texture_3d_width", file->limits.max_texture_3d_width, limits->max_texture_3d_width},
      {"max_texture_3d_height", file->limits.max_texture_3d_height, limits->max_texture_3d_height},
      {"max_texture_3d_depth", file->limits.max_texture_3d_depth, limits->max_texture_3d_depth},
      {"max_texture_array_layers", file->limits.max_texture_array_layers, limits->max_texture_array_layers},
  };
  for (size_t i = 0; i < sizeof k_limits / sizeof k_limits[0]; ++i) {
    /* A limit the plan was made without (0) is at least as large as any device's. */
    uint64_t planned = k_limits[i].planned ? k_limits[i].planned : UINT64_MAX;
    if (k_limits[i].device && planned > k_limits[i].device)
      return tg__error(err, TG_ERROR_LIMIT, "%s: the plan was made for %s%llu, this device has %llu", k_limits[i].name,
                       k_limits[i].planned ? "" : "no limit, ", (unsigned long long)k_limits[i].planned,
                       (unsigned long long)k_limits[i].device);
  }
  return TG_OK;
}

/* Why the model does not allow `pair` (one not among its allowed pairs). */
static const char *pair_refusal(const tg_cli_input *in, const tg_in_place_pair *pair, int read_write_images,
                                char *buf, size_t size) {
  const tg_graph *g = in->graph;
  if (g == NULL) return "usage records have no ops to run in place";
  if (pair->op >= g->op_count) return "the model has no such op";
  const char *name = g->ops[pair->op].name ? g->ops[pair->op].name : "?";
  const tg_in_place_kind kind = tg_op_in_place_kind(name);
  if (kind == TG_IN_PLACE_NONE)
    snprintf(buf, size, "%s has no in-place form", name);
  else if ((kind == TG_IN_PLACE_VIEW) != (pair->view != 0))
    snprintf(buf, size, "declared as %s, but %s is %s", pair->view ? "a view" : "elementwise", name,
             kind == TG_IN_PLACE_VIEW ? "a view" : "elementwise");
  else if (kind == TG_IN_PLACE_ELEMENTWISE && in->model_records &&
           in->model_records->storage != TG_STORAGE_BUFFER && !read_write_images)
    snprintf(buf, size, "elementwise in %s: this device cannot read and write one image in one kernel",
             tg_storage_name(in->model_records->storage));
  else
    snprintf(buf, size, "not an in-place pair of these records on this device (the input must die at the op, "
             "with the output's size, type and layout)");
  return buf;
}

tg_status tg_cli_plan_file_check_pairs(const tg_plan *plan, const tg_cli_input *in, int read_write_images,
                                       const tg_in_place_pair *allowed, size_t allowed_count, tg_error_info *err) {
  const tg_record_set *set = in->records;
  for (size_t i = 0; i < plan->in_place_count; ++i) {
    const tg_in_place_pair *p = &plan->in_place[i];
    int found = 0;
    for (size_t k = 0; k < allowed_count && !found; ++k)
      found = allowed[k].op == p->op && allowed[k].input == p->input && allowed[k].output == p->output &&
              (allowed[k].view != 0) == (p->view != 0);
    if (found) continue;
    char why[200];
    const char *op = in->graph && p->op < in->graph->op_count && in->graph->ops[p->op].name
                         ? in->graph->ops[p->op].name : "?";
    const char *a = p->input < set->count && set->names[p->input] ? set->names[p->input] : "?";
    const char *b = p->output < set->count && set->names[p->output] ? set->names[p->output] : "?";
    return tg__error(err, TG_ERROR_INVALID_PLAN,
                     "in-place pair at op %u (%s): %s -> %s: %s; a plan made here would not use it", p->op, op, a,
                     b, pair_refusal(in, p, read_write_images, why, sizeof why));
  }
  return TG_OK;
}

int tg_cli_range_plan_savable(const char *cmd, const tg_model_range *mr) {
  size_t n = tg_model_records_fallback_count(mr->records);
  if (n == 0) return 1;
  tg_cli_error("%s: --save: %zu tensors do not fit %s under the device limits and fall back to other storages; a "
               "plan file holds one storage: choose another --storage",
               cmd, n, tg_storage_name(mr->records->storage));
  return 0;
}

int tg_cli_range_plan_save(const char *path, const tg_model_range *mr, const tg_range_plan *rp,
                           const tg_model_options *shapes, const char *source, const tg_cli_input_options *io,
                           tg_policy policy, tg_strategy strategy, uint64_t alignment, const tg_allocator *alloc,
                           char hex[2 * TG_FINGERPRINT_BYTES + 1]) {
  const tg_record_set *set = mr->records->records;
  if (!tg_cli_range_plan_savable("plan", mr)) return TG_EXIT_USAGE;
  /* The records and plan at the range's first size. */
  tg_usage_record *recs = tg__calloc(alloc, set->count ? set->count : 1, sizeof *recs);
  tg_plan *first = NULL;
  tg_status st = recs ? tg_range_plan_create_instance(rp, alloc, &first) : TG_ERROR_OUT_OF_HOST_MEMORY;
  int64_t at[TG_RANGE_MAX_DIMS] = {mr->range.dim[0].lo, mr->range.dim[1].lo};
  if (st == TG_OK) st = tg_range_plan_instantiate(rp, at, recs, first);
  int code;
  if (st == TG_OK) {
    tg_plan_file_range fr = {rp, mr->primary, shapes->input_shapes, shapes->input_shape_count};
    tg_plan_file_desc d = {0};
    d.plan = first;
    d.records = recs;
    d.names = (const char *const *)set->names;
    d.record_count = set->count;
    d.dims = set->dims;
    d.range = &fr;
    code = save(path, &d, io, policy, strategy, alignment, source, alloc, hex);
  } else {
    tg_cli_error("plan: --save: the plan at the first size: %s", tg_status_string(st));
    code = TG_EXIT_FAILURE;
  }
  tg_plan_destroy(first);
  tg__free(alloc, recs);
  return code;
}
