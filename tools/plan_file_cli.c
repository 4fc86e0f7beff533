#include "tools/plan_file_cli.h"

#include <stdio.h>

void tg_cli_fingerprint_hex(const uint8_t fp[TG_FINGERPRINT_BYTES], char hex[2 * TG_FINGERPRINT_BYTES + 1]) {
  for (int i = 0; i < TG_FINGERPRINT_BYTES; ++i) snprintf(hex + 2 * i, 3, "%02x", fp[i]);
}

int tg_cli_plan_save(const char *path, const tg_cli_input *in, const char *source,
                     const tg_cli_input_options *io, tg_policy policy, tg_strategy strategy,
                     uint64_t alignment, const tg_plan *plan, const tg_allocator *alloc,
                     char hex[2 * TG_FINGERPRINT_BYTES + 1]) {
  const tg_record_set *set = in->records;
  const tg_model_records *mr = in->model_records;
  if (mr && mr->fallback && mr->fallback->count) {
    tg_cli_error("plan: --save: %zu tensors do not fit %s under the default device limits and fall back to "
                 "buffers (first: %s); a plan file holds one storage: choose another --storage",
                 mr->fallback->count, tg_storage_name(io->storage), mr->fallback_reasons[0]);
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
  d.storage = storage;
  d.precision = io->precision;
  d.policy = policy;
  d.strategy = strategy;
  d.alignment = alignment;
  d.flags = io->plan_io ? TG_PLAN_FILE_IO_PLANNED : 0;
  d.source = source;
  tg_error_info err = {{0}};
  tg_status st = tg_plan_file_save(&d, path, alloc, &err);
  if (st != TG_OK) {
    tg_cli_error("plan: --save: %s", err.message);
    return st == TG_ERROR_IO ? TG_EXIT_FAILURE : tg_cli_exit_code(st);
  }
  uint8_t fp[TG_FINGERPRINT_BYTES];
  tg_records_fingerprint(d.records, d.names, d.record_count, d.dims, fp);
  tg_cli_fingerprint_hex(fp, hex);
  return TG_EXIT_OK;
}
