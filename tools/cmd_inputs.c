/* `tangram inputs`: a model's graph inputs as the file declares them (names, element types,
 * dimensions, which are dynamic), read without loading the model: what to pass to
 * --input-shape (tg_model_options.input_shapes in the library). */
#include <string.h>

#include "tangram/model.h"
#include "tools/cli.h"
#include "model/model_internal.h"
#include "tools/input.h"
#include "tools/range_cli.h"

static void inputs_usage(FILE *to) {
  fputs(
      "usage: tangram inputs MODEL [--json]\n"
      "       tangram inputs MODEL --input-shape NAME:DxDx... [--storage S] [--precision P]\n"
      "                      [--plan-io] [--json]\n"
      "\n"
      "Lists the graph inputs of MODEL (.tflite, .onnx or a text graph) without planning it:\n"
      "name, element type and shape, '?' for a dimension the file leaves without a size, and\n"
      "which dimensions are dynamic. An input marked 'needs --input-shape' cannot be planned\n"
      "until its size is given; a .tflite dynamic dimension with a size in the file is planned\n"
      "at that size unless --input-shape gives another (as TFLite runs it until resized).\n"
      "\n"
      "A dynamic dimension may be given a range, LO..HI or LO..HI/STEP (LO, LO+STEP, ... up to\n"
      "HI), e.g. --input-shape x:1x3x48x32..1600/8 or x:1x3x32..960/32x32..960/32; one or two\n"
      "dimensions may vary in all (dimensions the file names alike, given the same range, vary\n"
      "together). With a range, the model is loaded at every size of it and the records of\n"
      "every size are listed: per size, the total bytes of all records (textures: texels x\n"
      "texel bytes) and the largest record. The records must be the same at every size (a\n"
      "tensor that falls back to another storage at some sizes only is refused, naming it and\n"
      "the two sizes); a size where shape inference fails is refused naming the op and the size.\n"
      "\n"
      "options:\n"
      "  --input-shape NAME:DxDx...  sizes of dynamic inputs, with ranges (repeatable)\n"
      "  --storage NAME           with a range: buffer (default), image_buffer, texture_2d,\n"
      "                           texture_array, texture_3d, single_texture_2d (tensors that do\n"
      "                           not fit fall along the chain, default device limits)\n"
      "  --precision fp32|fp16    with a range: element precision (default fp32)\n"
      "  --plan-io                with a range: graph inputs and outputs get records too\n"
      "  --json                   one JSON object on stdout instead of the table\n"
      "  -h, --help               this text\n"
      "\n"
      "Exit status: 0 ok, 1 failure, 2 bad usage or input.\n",
      to);
}

void tg_cli_input_shape_text(const tg_model_input *in, char *buf, size_t size) {
  if (!in->has_shape) {
    snprintf(buf, size, "DxDx...");
    return;
  }
  tg__shape_text(in->dims, in->rank, buf, size);
}

static void json_inputs(tg__strbuf *b, const char *file, const tg_model_inputs *l) {
  tg__strbuf_puts(b, "{\"file\":");
  tg__strbuf_json_string(b, file);
  tg__strbuf_printf(b, ",\"format\":\"%s\",\"inputs\":[", tg_model_format_name(l->format));
  for (size_t k = 0; k < l->count; ++k) {
    const tg_model_input *in = &l->inputs[k];
    tg__strbuf_puts(b, k ? ",{\"name\":" : "{\"name\":");
    tg__strbuf_json_string(b, in->name);
    const char *dtype = tg_dtype_name(in->dtype);
    tg__strbuf_printf(b, ",\"dtype\":\"%s\",\"shape\":", dtype ? dtype : "unknown");
    if (!in->has_shape) {
      tg__strbuf_puts(b, "null");
    } else {
      tg__strbuf_puts(b, "[");
      for (uint32_t d = 0; d < in->rank; ++d) tg__strbuf_printf(b, "%s%lld", d ? "," : "", (long long)in->dims[d]);
      tg__strbuf_puts(b, "]");
    }
    tg_cli_json_dynamic(b, in->dynamic, in->rank);
    tg__strbuf_puts(b, ",\"dim_names\":{");
    int first = 1;
    for (uint32_t d = 0; d < in->rank; ++d)
      if (in->dim_names[d] != NULL) {
        tg__strbuf_printf(b, "%s\"%u\":", first ? "" : ",", d);
        tg__strbuf_json_string(b, in->dim_names[d]);
        first = 0;
      }
    tg__strbuf_printf(b, "},\"needs_shape\":%s}", in->needs_shape ? "true" : "false");
  }
  tg__strbuf_puts(b, "]}\n");
}

static void table_inputs(tg__strbuf *b, const char *file, const tg_model_inputs *l) {
  tg__strbuf_printf(b, "%s (%s): %zu input%s\n", file, tg_model_format_name(l->format), l->count,
                    l->count == 1 ? "" : "s");
  for (size_t k = 0; k < l->count; ++k) {
    const tg_model_input *in = &l->inputs[k];
    char shape[200];
    tg_cli_input_shape_text(in, shape, sizeof shape);
    const char *dtype = tg_dtype_name(in->dtype);
    tg__strbuf_printf(b, "  %-24s %-8s %-20s", in->name, dtype ? dtype : "unknown", in->has_shape ? shape : "(no shape)");
    if (in->dynamic) {
      tg__strbuf_puts(b, " dynamic:");
      for (uint32_t d = 0; d < in->rank; ++d) {
        if (!((in->dynamic >> d) & 1u)) continue;
        tg__strbuf_printf(b, " %u", d);
        if (in->dim_names[d]) tg__strbuf_printf(b, " ('%s')", in->dim_names[d]);
        else if (in->dims[d] >= 0) tg__strbuf_printf(b, " (file: %lld)", (long long)in->dims[d]);
      }
    }
    if (in->needs_shape) tg__strbuf_printf(b, "  needs --input-shape %s:%s", in->name, shape);
    tg__strbuf_puts(b, "\n");
  }
  for (size_t k = 0; k < l->count; ++k)
    if (l->inputs[k].dynamic) {
      tg__strbuf_puts(b, "A dynamic dimension may be a range, LO..HI or LO..HI/STEP (at most two in all), "
                         "e.g. --input-shape x:1x3x48x32..1600/8: see tangram inputs --help\n");
      break;
    }
}

/* The bytes of one record of `set` (stored in `storage`). */
static uint64_t record_bytes(const tg_usage_record *rec, uint32_t dims, tg_precision precision) {
  uint64_t v = 0;
  if (tg_extent_volume(rec->size, &v) != TG_OK) return UINT64_MAX;
  if (dims == 1) return v;
  uint64_t bytes;
  return tg__mul_u64(v, tg_precision_texel_bytes(precision), &bytes) ? bytes : UINT64_MAX;
}

/* Per size: every record's bytes over all groups, and the largest. */
static tg_status range_totals(const tg_model_range *r, tg_precision precision, const int64_t *dims,
                              tg_usage_record *scratch, uint64_t *total, uint64_t *largest) {
  *total = 0;
  *largest = 0;
  for (int g = -1; g < TG_STORAGE_COUNT; ++g) {
    const tg_range_records *rr = g < 0 ? r->primary : r->fallbacks[g];
    if (rr == NULL) continue;
    tg_status st = tg_range_records_at(rr, dims, scratch);
    if (st != TG_OK) return st;
    for (size_t i = 0; i < tg_range_records_count(rr); ++i) {
      uint64_t b = record_bytes(&scratch[i], tg_range_records_dims(rr), precision);
      *total = tg__add_sat_u64(*total, b);
      if (b > *largest) *largest = b;
    }
  }
  return TG_OK;
}

/* The records at every size of the range (`inputs MODEL --input-shape x:..LO..HI..`). */
static int inputs_over_range(const char *file, const tg_cli_model_options *shapes, tg_storage storage,
                             tg_precision precision, int plan_io, int json, const tg_allocator *alloc) {
  tg_device_limits limits = tg_device_limits_default();
  tg_model_range_desc desc = {&shapes->options, storage, precision, &limits, plan_io, 1, 1};
  tg_model_range *r = NULL;
  tg_error_info err = {{0}};
  uint64_t t0 = tg__now_us();
  tg_status st = tg_model_range_load(file, &desc, alloc, &r, &err);
  uint64_t load_us = tg__now_us() - t0;
  if (st != TG_OK) {
    tg_cli_error("%s", err.message[0] ? err.message : tg_status_string(st));
    return tg_cli_exit_code(st);
  }
  size_t most = 1;
  for (int g = -1; g < TG_STORAGE_COUNT; ++g) {
    const tg_range_records *rr = g < 0 ? r->primary : r->fallbacks[g];
    if (rr != NULL && tg_range_records_count(rr) > most) most = tg_range_records_count(rr);
  }
  tg_usage_record *scratch = tg__calloc(alloc, most, sizeof *scratch);
  tg__strbuf b;
  tg__strbuf_init(&b, alloc);
  size_t primary = tg_range_records_count(r->primary), fallback = tg_model_records_fallback_count(r->records);
  if (json) {
    tg__strbuf_puts(&b, "{\"file\":");
    tg__strbuf_json_string(&b, file);
    tg__strbuf_printf(&b, ",\"format\":\"%s\",\"range\":{", tg_model_format_name(r->model->format));
    tg_cli_json_range_dims(&b, r);
    tg__strbuf_printf(&b, ",\"points\":%llu,\"storage\":\"%s\",\"precision\":\"%s\",\"records\":%zu,"
                          "\"fallback_tensors\":%zu,\"in_place_pairs\":%zu,\"load_us\":%llu,\"sizes\":[",
                      (unsigned long long)r->point_count, tg_storage_name(storage), tg_precision_name(precision), primary,
                      fallback, r->in_place_count, (unsigned long long)load_us);
  } else {
    tg__strbuf_printf(&b, "%s (%s): %llu sizes, %zu records in %s %s", file, tg_model_format_name(r->model->format),
                      (unsigned long long)r->point_count, primary, tg_storage_name(storage), tg_precision_name(precision));
    if (fallback) tg__strbuf_printf(&b, " + %zu fallen back", fallback);
    tg__strbuf_printf(&b, " at every size, %zu in-place pairs at every size; loaded in %.3f s\n", r->in_place_count,
                      (double)load_us / 1e6);
    tg__strbuf_printf(&b, "%-12s %16s %16s\n", "size", "bytes", "largest");
  }
  for (uint64_t p = 0; st == TG_OK && scratch != NULL && p < r->point_count; ++p) {
    int64_t dims[TG_RANGE_MAX_DIMS];
    uint64_t total, largest;
    st = tg_size_range_point(&r->range, p, dims);
    if (st == TG_OK) st = range_totals(r, precision, dims, scratch, &total, &largest);
    if (st != TG_OK) break;
    char name[64];
    tg_cli_range_size_name(&r->range, dims, name, sizeof name);
    if (json) {
      tg__strbuf_printf(&b, "%s{\"dims\":[%lld", p ? "," : "", (long long)dims[0]);
      if (r->range.count > 1) tg__strbuf_printf(&b, ",%lld", (long long)dims[1]);
      tg__strbuf_printf(&b, "],\"bytes\":%llu,\"largest\":%llu}", (unsigned long long)total,
                        (unsigned long long)largest);
    } else {
      tg__strbuf_printf(&b, "%-12s %16llu %16llu\n", name, (unsigned long long)total, (unsigned long long)largest);
    }
  }
  if (json) tg__strbuf_puts(&b, "]}}\n");
  int ok = st == TG_OK && scratch != NULL && !b.failed;
  if (ok) fwrite(b.data, 1, b.length, stdout);
  else tg_cli_error("inputs: %s", st != TG_OK ? tg_status_string(st) : "out of memory");
  tg__strbuf_free(&b);
  tg__free(alloc, scratch);
  tg_model_range_destroy(r);
  return ok ? TG_EXIT_OK : TG_EXIT_FAILURE;
}

int tg_cli_inputs(int argc, char **argv) {
  const char *file = NULL, *storage_s = NULL, *precision_s = NULL;
  int json = 0, plan_io = 0;
  tg_cli_model_options shapes;
  memset(&shapes, 0, sizeof shapes);
  shapes.ranges = 1;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      inputs_usage(stdout);
      return TG_EXIT_OK;
    }
    int at = i, m = tg_cli_input_shape_option(argc, argv, &at, &shapes);
    if (m == 0) m = tg_cli_option(argc, argv, &at, "--storage", &storage_s);
    if (m == 0) m = tg_cli_option(argc, argv, &at, "--precision", &precision_s);
    if (m < 0) return TG_EXIT_USAGE;
    if (m > 0) {
      i = at - 1;
      continue;
    }
    if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (strcmp(argv[i], "--plan-io") == 0) {
      plan_io = 1;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      tg_cli_error("inputs: unknown option '%s'", argv[i]);
      inputs_usage(stderr);
      return TG_EXIT_USAGE;
    } else if (file == NULL) {
      file = argv[i];
    } else {
      tg_cli_error("inputs: one MODEL only ('%s' and '%s')", file, argv[i]);
      return TG_EXIT_USAGE;
    }
  }
  if (file == NULL) {
    inputs_usage(stderr);
    return TG_EXIT_USAGE;
  }
  tg_failing_allocator fa;
  const tg_allocator *alloc = tg_cli_allocator(&fa);
  if (shapes.options.input_shape_count > 0) {
    tg_storage storage = TG_STORAGE_BUFFER;
    tg_precision precision = TG_PRECISION_FP32;
    if (storage_s != NULL && tg_storage_from_name(storage_s, &storage) != TG_OK) {
      tg_cli_error("inputs: --storage '%s': expected buffer, image_buffer, texture_2d, texture_array, texture_3d "
                   "or single_texture_2d", storage_s);
      return TG_EXIT_USAGE;
    }
    if (precision_s != NULL && tg_precision_from_name(precision_s, &precision) != TG_OK) {
      tg_cli_error("inputs: --precision '%s': expected fp32 or fp16", precision_s);
      return TG_EXIT_USAGE;
    }
    return inputs_over_range(file, &shapes, storage, precision, plan_io, json, alloc);
  }
  if (storage_s != NULL || precision_s != NULL || plan_io) {
    tg_cli_error("inputs: --storage, --precision and --plan-io go with --input-shape and a range");
    return TG_EXIT_USAGE;
  }
  tg_error_info err = {0};
  tg_model_inputs *l = NULL;
  tg_status st = tg_model_list_inputs(file, alloc, &l, &err);
  if (st != TG_OK) {
    tg_cli_error("%s", err.message[0] ? err.message : tg_status_string(st));
    return tg_cli_exit_code(st);
  }
  tg__strbuf b;
  tg__strbuf_init(&b, alloc);
  if (json) json_inputs(&b, file, l);
  else table_inputs(&b, file, l);
  tg_model_inputs_destroy(l);
  int ok = !b.failed;
  if (ok) fwrite(b.data, 1, b.length, stdout);
  tg__strbuf_free(&b);
  if (!ok) {
    tg_cli_error("inputs: out of memory");
    return TG_EXIT_FAILURE;
  }
  return TG_EXIT_OK;
}
