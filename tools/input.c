#include "tools/input.h"

#include <stdio.h>
#include <string.h>

tg_status tg_cli_input_load(const char *path, const tg_cli_input_options *options,
                            const tg_allocator *alloc, tg_cli_input *in, tg_error_info *err) {
  memset(in, 0, sizeof *in);
  in->alloc = alloc;
  /* An empty file is no model and no records: say so rather than planning nothing. */
  FILE *f = fopen(path, "rb");
  if (f != NULL) {
    int c, blank = 1;
    while (blank && (c = fgetc(f)) != EOF) blank = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    fclose(f);
    if (blank) return tg__error(err, TG_ERROR_PARSE, "%s: empty file: expected a model or usage records", path);
  }
  tg_status st = tg_model_load(path, alloc, &in->model, err);
  if (st != TG_OK) return st;
  if (in->model->kind != TG_MODEL_GRAPH) {
    in->records = in->model->records;
    return TG_OK;
  }
  in->graph = in->model->graph;
  tg_lifetime_options lo = {options->plan_io};
  st = tg_graph_compute_lifetimes(in->graph, &lo, alloc, &in->lifetimes, err);
  if (st == TG_OK) {
    tg_device_limits def = tg_device_limits_default();
    st = tg_model_records_create(in->graph, in->lifetimes, options->storage, options->precision,
                                 options->limits ? options->limits : &def, alloc,
                                 &in->model_records, err);
  }
  if (st == TG_OK) st = tg_schedule_create(in->graph, NULL, alloc, &in->schedule, err);
  if (st != TG_OK) {
    tg_cli_input_free(in);
    return st;
  }
  in->records = in->model_records->records;
  in->tensor_of = in->model_records->tensor_of;
  return TG_OK;
}

void tg_cli_input_free(tg_cli_input *in) {
  tg_schedule_destroy(in->schedule);
  tg_model_records_destroy(in->model_records);
  tg_lifetimes_destroy(in->lifetimes);
  tg_model_destroy(in->model);
  memset(in, 0, sizeof *in);
}

tg_status tg_cli_input_relation(const tg_cli_input *in, tg_policy policy,
                                tg_policy_relation **out, tg_error_info *err) {
  *out = NULL;
  if (policy == TG_POLICY_SERIAL) return TG_OK;
  if (in->schedule == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                     "policy %s needs a model's graph; usage-record CSVs have only the serial order",
                     tg_policy_name(policy));
  tg_status st = tg_policy_relation_create(in->schedule, policy, in->tensor_of,
                                           in->records->count, in->alloc, out);
  if (st != TG_OK) return tg__error(err, st, "building the %s relation failed: %s",
                                    tg_policy_name(policy), tg_status_string(st));
  return TG_OK;
}
