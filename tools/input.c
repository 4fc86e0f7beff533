#include "tools/input.h"

#include <stdio.h>
#include <string.h>

#include "model/model_internal.h"

tg_status tg_cli_record_sizes(const tg_graph *graph, const tg_model_records *records,
                               const tg_allocator *alloc, uint64_t **sizes) {
  *sizes = tg__calloc(alloc, graph->tensor_count ? graph->tensor_count : 1, sizeof **sizes);
  if (*sizes == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  const tg_record_set *set = records->records;
  for (size_t r = 0; r < set->count; ++r) {
    uint64_t v = 0;
    if (tg_extent_volume(set->records[r].size, &v) != TG_OK) {
      tg__free(alloc, *sizes);
      *sizes = NULL;
      return TG_ERROR_OVERFLOW;
    }
    (*sizes)[records->tensor_of[r]] = v;
  }
  return TG_OK;
}

/* Lifetimes, model records and schedule of in->graph (none of them built yet); frees the
 * whole input on failure. */
static tg_status derive_from_graph(tg_cli_input *in, const tg_cli_input_options *options,
                                   tg_error_info *err) {
  tg_lifetime_options lo = {options->plan_io};
  tg_device_limits def = tg_device_limits_default();
  tg_status st = tg_graph_compute_lifetimes(in->graph, &lo, in->alloc, &in->lifetimes, err);
  if (st == TG_OK)
    st = (options->chain ? tg_model_records_create_chain : tg_model_records_create)(
        in->graph, in->lifetimes, options->storage, options->precision, options->limits ? options->limits : &def,
        in->alloc, &in->model_records, err);
  if (st == TG_OK) st = tg_schedule_create(in->graph, NULL, in->alloc, &in->schedule, err);
  /* Image storages: the pairs assume one kernel may read and write one image (Vulkan). */
  if (st == TG_OK)
    st = tg_model_in_place_pairs(in->graph, in->lifetimes, in->model_records, 1, in->alloc, &in->in_place,
                                 &in->in_place_count);
  if (st != TG_OK) {
    tg_cli_input_free(in);
    return st;
  }
  in->records = in->model_records->records;
  in->tensor_of = in->model_records->tensor_of;
  return TG_OK;
}

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
  tg_status st = tg_cli_model_load(path, options->model, alloc, options->quiet, &in->model, err);
  if (st != TG_OK) return st;
  if (in->model->kind != TG_MODEL_GRAPH) {
    in->records = in->model->records;
    return TG_OK;
  }
  in->graph = in->model->graph;
  return derive_from_graph(in, options, err);
}

int tg_cli_input_shape_option(int argc, char **argv, int *i, tg_cli_model_options *o) {
  const char *v;
  int m = tg_cli_option(argc, argv, i, "--input-shape", &v);
  if (m <= 0) return m;
  size_t k = o->options.input_shape_count;
  if (k >= TG_CLI_MAX_INPUT_SHAPES) {
    tg_cli_error("--input-shape: at most %d inputs", TG_CLI_MAX_INPUT_SHAPES);
    return -1;
  }
  char problem[TG_ERROR_MESSAGE_MAX];
  tg_input_shape s;
  if (tg_input_shape_parse(v, o->names[k], sizeof o->names[k], &s, problem, sizeof problem) != TG_OK) {
    tg_cli_error("--input-shape %s", problem);
    return -1;
  }
  for (size_t j = 0; j < k; ++j)
    if (strcmp(o->names[j], o->names[k]) == 0) {
      tg_cli_error("--input-shape: input '%s' is given twice", o->names[k]);
      return -1;
    }
  int ranged = 0;
  for (uint32_t d = 0; d < s.rank; ++d) ranged |= s.range[d].step != 0;
  if (ranged && !o->ranges) {
    tg_cli_error("--input-shape %s: ranges: not supported by this command yet (tangram inputs MODEL "
                 "--input-shape %s lists the records at every size)", v, v);
    return -1;
  }
  o->shapes[k] = s;
  o->options.input_shapes = o->shapes;
  o->options.input_shape_count = k + 1;
  return 1;
}

int tg_cli_range_given(const tg_model_options *options) {
  for (size_t k = 0; options != NULL && k < options->input_shape_count; ++k)
    for (uint32_t d = 0; d < options->input_shapes[k].rank && d < TG_MAX_RANK; ++d)
      if (options->input_shapes[k].range[d].step != 0) return 1;
  return 0;
}

void tg_cli_input_free(tg_cli_input *in) {
  if (in->in_place) tg__free(in->alloc, in->in_place);
  tg_schedule_destroy(in->schedule);
  tg_model_records_destroy(in->model_records);
  tg_lifetimes_destroy(in->lifetimes);
  tg_op_order_destroy(in->order);
  tg_graph_destroy(in->reordered);
  tg_model_destroy(in->model);
  memset(in, 0, sizeof *in);
}

/* Policies other than serial need the graph's schedule. */
static tg_status check_policy(const tg_cli_input *in, tg_policy policy, tg_error_info *err) {
  if (policy == TG_POLICY_SERIAL || in->schedule != NULL) return TG_OK;
  return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                   "policy %s needs a model's graph; usage-record CSVs have only the serial order",
                   tg_policy_name(policy));
}

tg_status tg_cli_input_relation(const tg_cli_input *in, tg_policy policy,
                                tg_policy_relation **out, tg_error_info *err) {
  *out = NULL;
  if (policy == TG_POLICY_SERIAL) return TG_OK;
  if (check_policy(in, policy, err) != TG_OK) return TG_ERROR_INVALID_ARGUMENT;
  tg_status st = tg_policy_relation_create(in->schedule, policy, in->tensor_of,
                                           in->records->count, in->alloc, out);
  if (st != TG_OK) return tg__error(err, st, "building the %s relation failed: %s",
                                    tg_policy_name(policy), tg_status_string(st));
  return TG_OK;
}

tg_status tg_cli_input_relations(const tg_cli_input *in, tg_policy policy, tg_model_relations *out,
                                 tg_error_info *err) {
  memset(out, 0, sizeof *out);
  if (policy == TG_POLICY_SERIAL) return TG_OK;
  if (check_policy(in, policy, err) != TG_OK) return TG_ERROR_INVALID_ARGUMENT;
  tg_status st = tg_model_relations_create(in->schedule, policy, in->model_records, in->alloc, out);
  if (st != TG_OK) return tg__error(err, st, "building the %s relations failed: %s",
                                    tg_policy_name(policy), tg_status_string(st));
  return TG_OK;
}

tg_status tg_cli_device_pairs(const tg_cli_input *in, int read_write_images, const tg_record_set *planned,
                              tg_in_place_pair **pairs, size_t *count) {
  *pairs = NULL;
  *count = 0;
  if (in->graph == NULL) return TG_OK;
  tg_status st = tg_model_in_place_pairs(in->graph, in->lifetimes, in->model_records, read_write_images, in->alloc,
                                         pairs, count);
  if (st != TG_OK) return st;
  size_t kept = 0;
  for (size_t i = 0; i < *count; ++i) {
    const tg_extent a = planned->records[(*pairs)[i].input].size, b = planned->records[(*pairs)[i].output].size;
    if (a.w == b.w && a.h == b.h && a.d == b.d) (*pairs)[kept++] = (*pairs)[i];
  }
  *count = kept;
  if (kept == 0) {
    tg__free(in->alloc, *pairs);
    *pairs = NULL;
  }
  return TG_OK;
}

tg_status tg_cli_input_reorder(tg_cli_input *in, const tg_cli_input_options *options,
                               const tg_order_options *order_options, tg_error_info *err) {
  if (in->graph == NULL) {
    tg_cli_input_free(in);
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                     "--reorder needs a model's graph; usage records have a fixed order");
  }
  uint64_t *sizes = NULL;
  tg_status st = tg_cli_record_sizes(in->graph, in->model_records, in->alloc, &sizes);
  if (st != TG_OK) {
    tg_cli_input_free(in);
    return tg__error(err, st, "reorder: record sizes: %s", tg_status_string(st));
  }
  st = tg_op_order_compute(in->graph, in->lifetimes, sizes, order_options, in->alloc, &in->order, err);
  tg__free(in->alloc, sizes);
  if (st == TG_OK) {
    st = tg_graph_create_reordered(in->graph, in->order->order, in->alloc, &in->reordered);
    if (st != TG_OK) tg__error(err, st, "reorder: %s", tg_status_string(st));
  }
  if (st == TG_OK) {
    /* Everything derived from the op order is rebuilt on the reordered graph. */
    tg_schedule_destroy(in->schedule);
    tg_model_records_destroy(in->model_records);
    tg_lifetimes_destroy(in->lifetimes);
    in->schedule = NULL;
    in->model_records = NULL;
    in->lifetimes = NULL;
    in->records = NULL;
    in->tensor_of = NULL;
    if (in->in_place) tg__free(in->alloc, in->in_place);
    in->in_place = NULL;
    in->in_place_count = 0;
    in->graph = in->reordered;
    return derive_from_graph(in, options, err);
  }
  tg_cli_input_free(in);
  return st;
}

tg_status tg_cli_resources(const tg_record_set *set, tg_storage storage, tg_precision precision,
                           const tg_allocator *alloc, tg_tensor_resource **out) {
  *out = tg__calloc(alloc, set->count ? set->count : 1, sizeof **out);
  if (*out == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  uint64_t texel = tg_precision_texel_bytes(precision);
  for (size_t r = 0; r < set->count; ++r) {
    tg_tensor_resource *res = &(*out)[r];
    res->storage = storage;
    if (set->dims == 1) {
      res->bytes = set->records[r].size.w;
      res->extent = (tg_extent){res->bytes, 1, 1};
    } else {
      res->extent = set->records[r].size;
      uint64_t v;
      if (tg_extent_volume(res->extent, &v) != TG_OK || !tg__mul_u64(v, texel, &res->bytes))
        return TG_ERROR_OVERFLOW;
    }
  }
  return TG_OK;
}

tg_status tg_cli_model_load(const char *path, const tg_model_options *options, const tg_allocator *alloc,
                            int quiet, tg_model **out, tg_error_info *err) {
  if (out == NULL || path == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "path or out is NULL");
  *out = NULL;
  alloc = tg__alloc_or_default(alloc);
  /* Read once: the bytes serve the load and, when a size is missing, the input listing that
   * names the --input-shape to give. */
  char *data;
  size_t length;
  tg_status st = tg__read_file(path, alloc, &data, &length, err);
  if (st != TG_OK) return st;
  st = tg_model_parse_with(data, length, path, options, alloc, out, err);
  if (st == TG_ERROR_INVALID_ARGUMENT && err != NULL) {
    tg_model_inputs *l = NULL;
    tg_error_info ignored = {0};
    if (tg_model_parse_inputs(data, length, path, alloc, &l, &ignored) == TG_OK) {
      size_t n = strlen(err->message);
      for (size_t k = 0; k < l->count; ++k) {
        if (!l->inputs[k].needs_shape || tg__find_input_shape(options, l->inputs[k].name) != NULL) continue;
        char shape[160];
        tg_cli_input_shape_text(&l->inputs[k], shape, sizeof shape);
        int w = snprintf(err->message + n, sizeof err->message - n, "%s --input-shape %s:%s",
                         strstr(err->message, "; with the CLI:") == NULL ? "; with the CLI:" : ",", l->inputs[k].name, shape);
        if (w < 0 || (size_t)w >= sizeof err->message - n) break;
        n += (size_t)w;
      }
      tg_model_inputs_destroy(l);
    }
  }
  tg__free(alloc, data);
  if (st != TG_OK || (*out)->graph == NULL || quiet) return st;
  const tg_graph *g = (*out)->graph;
  for (size_t k = 0; k < g->input_count; ++k) {
    const tg_tensor *t = &g->tensors[g->inputs[k]];
    if (!(t->flags & TG_TENSOR_ASSUMED_SHAPE)) continue;
    char shape[160];
    tg__shape_text(t->shape, t->rank, shape, sizeof shape);
    fprintf(stderr, "tangram: %s: input '%s' has dynamic dimensions; planned at %s, the size the file "
            "records (as TFLite runs it until resized; --input-shape %s:... plans another)\n",
            path, t->name, shape, t->name);
  }
  return TG_OK;
}

void tg_cli_json_assumed_inputs(tg__strbuf *b, const tg_graph *g) {
  if (g == NULL) return;
  tg__strbuf_puts(b, ",\"assumed_input_shapes\":[");
  int first = 1;
  for (size_t k = 0; k < g->input_count; ++k) {
    const tg_tensor *t = &g->tensors[g->inputs[k]];
    if (!(t->flags & TG_TENSOR_ASSUMED_SHAPE)) continue;
    tg__strbuf_puts(b, first ? "{\"name\":" : ",{\"name\":");
    first = 0;
    tg__strbuf_json_string(b, t->name);
    tg__strbuf_puts(b, ",\"shape\":[");
    for (uint32_t d = 0; d < t->rank; ++d) tg__strbuf_printf(b, "%s%lld", d ? "," : "", (long long)t->shape[d]);
    tg__strbuf_puts(b, "]");
    tg_cli_json_dynamic(b, t->dynamic_dims, t->rank);
    tg__strbuf_puts(b, "}");
  }
  tg__strbuf_puts(b, "]");
}

const tg_model_fallback *tg_cli_first_fallback(const tg_model_records *mr, tg_storage *to) {
  for (int g = 0; mr && g < TG_STORAGE_FALLBACK_COUNT; ++g) {
    const tg_model_fallback *f = &mr->fallbacks[tg_storage_fallback_at((uint32_t)g)];
    if (f->records && f->records->count) {
      if (to) *to = tg_storage_fallback_at((uint32_t)g);
      return f;
    }
  }
  return NULL;
}

void tg_cli_json_fallbacks(tg__strbuf *b, const tg_model_records *mr) {
  tg__strbuf_printf(b, ",\"fallback_tensors\":%zu,\"fallbacks\":[", tg_model_records_fallback_count(mr));
  int any = 0;
  for (int g = 0; mr && g < TG_STORAGE_FALLBACK_COUNT; ++g) {
    const tg_model_fallback *f = &mr->fallbacks[tg_storage_fallback_at((uint32_t)g)];
    for (size_t i = 0; f->records && i < f->records->count; ++i, any = 1) {
      tg__strbuf_puts(b, any ? ",{\"tensor\":" : "{\"tensor\":");
      tg__strbuf_json_string(b, f->records->names[i] ? f->records->names[i] : "?");
      tg__strbuf_printf(b, ",\"storage\":\"%s\",\"reason\":", tg_storage_name(tg_storage_fallback_at((uint32_t)g)));
      tg__strbuf_json_string(b, f->reasons[i]);
      tg__strbuf_puts(b, "}");
    }
  }
  tg__strbuf_puts(b, "],\"fallback_storages\":{");
  any = 0;
  for (int g = 0; mr && g < TG_STORAGE_FALLBACK_COUNT; ++g) {
    const tg_model_fallback *f = &mr->fallbacks[tg_storage_fallback_at((uint32_t)g)];
    if (f->records && f->records->count) {
      tg__strbuf_printf(b, "%s\"%s\":%zu", any ? "," : "", tg_storage_name(tg_storage_fallback_at((uint32_t)g)),
                        f->records->count);
      any = 1;
    }
  }
  tg__strbuf_puts(b, "}");
}

static double gain_pct(const tg_op_order *o) {
  return o->original_peak ? 100.0 * (1.0 - (double)o->peak / (double)o->original_peak) : 0.0;
}

void tg_cli_json_reorder(tg__strbuf *b, const tg_op_order *o) {
  tg__strbuf_printf(b, ",\"reorder\":{\"original_peak\":%llu,\"peak\":%llu,\"gain_pct\":%.3f,"
                       "\"method\":\"%s\",\"optimal\":%s,\"lower_bound\":%llu,\"folded_ops\":%zu,"
                       "\"exact_states\":%llu,\"elapsed_ms\":%.3f,\"op_order\":[",
                    (unsigned long long)o->original_peak, (unsigned long long)o->peak, gain_pct(o),
                    tg_order_method_name(o->method), o->proved_optimal ? "true" : "false",
                    (unsigned long long)o->lower_bound, o->folded_count,
                    (unsigned long long)o->exact_states, (double)o->elapsed_us / 1000.0);
  for (size_t k = 0; k < o->op_count; ++k) tg__strbuf_printf(b, "%s%u", k ? "," : "", o->order[k]);
  tg__strbuf_puts(b, "]}");
}

void tg_cli_text_reorder(tg__strbuf *b, const tg_op_order *o, const char *unit) {
  tg__strbuf_printf(b, "reorder: peak live %llu -> %llu %s (%.1f%% less), %s order%s", (unsigned long long)o->original_peak,
                    (unsigned long long)o->peak, unit, gain_pct(o), tg_order_method_name(o->method),
                    o->proved_optimal ? ", proved optimal" : "");
  if (!o->proved_optimal)
    tg__strbuf_printf(b, ", lower bound %llu", (unsigned long long)o->lower_bound);
  tg__strbuf_printf(b, "; %.1f ms; ops renumbered in the new order (--json: op_order)\n",
                    (double)o->elapsed_us / 1000.0);
}
