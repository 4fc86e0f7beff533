/* `tangram inputs`: a model's graph inputs as the file declares them (names, element types,
 * dimensions, which are dynamic), read without loading the model: what to pass to
 * --input-shape (tg_model_options.input_shapes in the library). */
#include <string.h>

#include "tangram/model.h"
#include "tools/cli.h"
#include "model/model_internal.h"
#include "tools/input.h"

static void inputs_usage(FILE *to) {
  fputs(
      "usage: tangram inputs MODEL [--json]\n"
      "\n"
      "Lists the graph inputs of MODEL (.tflite, .onnx or a text graph) without planning it:\n"
      "name, element type and shape, '?' for a dimension the file leaves without a size, and\n"
      "which dimensions are dynamic. An input marked 'needs --input-shape' cannot be planned\n"
      "until its size is given; a .tflite dynamic dimension with a size in the file is planned\n"
      "at that size unless --input-shape gives another (as TFLite runs it until resized).\n"
      "\n"
      "options:\n"
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
    tg__strbuf_puts(b, ",\"dynamic\":[");
    int first = 1;
    for (uint32_t d = 0; d < in->rank; ++d)
      if ((in->dynamic >> d) & 1u) {
        tg__strbuf_printf(b, "%s%u", first ? "" : ",", d);
        first = 0;
      }
    tg__strbuf_puts(b, "],\"dim_names\":{");
    first = 1;
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
}

int tg_cli_inputs(int argc, char **argv) {
  const char *file = NULL;
  int json = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      inputs_usage(stdout);
      return TG_EXIT_OK;
    }
    if (strcmp(argv[i], "--json") == 0) {
      json = 1;
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
