/* Loading a model file of any supported format. */
#include <stdio.h>
#include <string.h>

#include "model/model_internal.h"
#include "tangram/model.h"

const char *tg_model_format_name(tg_model_format format) {
  switch (format) {
    case TG_MODEL_FORMAT_TFLITE: return "tflite";
    case TG_MODEL_FORMAT_RECORDS_CSV: return "csv";
    case TG_MODEL_FORMAT_TEXT_GRAPH: return "text";
    case TG_MODEL_FORMAT_ONNX: return "onnx";
    default: return NULL;
  }
}

static int starts_with(const char *p, size_t n, const char *prefix) {
  size_t k = strlen(prefix);
  return n >= k && memcmp(p, prefix, k) == 0;
}

/* Writers emit protobuf fields in number order, so an ONNX ModelProto starts with ir_version
 * (field 1, a varint: tag 0x08) holding a small version, followed by the tag of another
 * ModelProto field (2..8, 14, 20 or 25 with its wire type) or the end of the data. No text
 * starts with byte 0x08. */
static int looks_like_onnx(const uint8_t *d, size_t n) {
  if (n < 2 || d[0] != 0x08 || d[1] == 0 || d[1] > 0x7f) return 0;
  if (n == 2) return 1;
  unsigned tag = d[2];
  if (tag & 0x80) {
    if (n < 4 || (d[3] & 0x80)) return 0;
    tag = (tag & 0x7f) | (unsigned)d[3] << 7;
  }
  unsigned field = tag >> 3, wt = tag & 7;
  switch (field) {
    case 2: case 3: case 4: case 6: case 7: case 8: case 14: case 20: case 25: return wt == 2;
    case 5: return wt == 0;
    default: return 0;
  }
}

tg_model_format tg_model_detect_format(const void *data, size_t length) {
  const char *p = data;
  if (p == NULL) return TG_MODEL_FORMAT_TEXT_GRAPH;
  if (length >= 8 && memcmp(p + 4, "TFL3", 4) == 0) return TG_MODEL_FORMAT_TFLITE;
  if (looks_like_onnx(data, length)) return TG_MODEL_FORMAT_ONNX;
  /* CSV: the header is the first line (a UTF-8 byte order mark is tolerated). */
  if (length >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) {
    p += 3;
    length -= 3;
  }
  if (starts_with(p, length, "name,") || starts_with(p, length, "size,") ||
      starts_with(p, length, "width,") || starts_with(p, length, "id,"))
    return TG_MODEL_FORMAT_RECORDS_CSV;
  return TG_MODEL_FORMAT_TEXT_GRAPH;
}

void tg_model_destroy(tg_model *m) {
  if (m == NULL) return;
  tg_allocator a = m->alloc;
  tg_graph_destroy(m->graph);
  tg_record_set_destroy(m->records);
  tg__free(&a, m);
}

tg_status tg_model_parse_with(const void *data, size_t length, const char *source,
                              const tg_model_options *options, const tg_allocator *alloc,
                              tg_model **out, tg_error_info *err) {
  if (out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = NULL;
  if (data == NULL && length > 0)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "data is NULL");
  alloc = tg__alloc_or_default(alloc);
  if (source == NULL) source = "<memory>";
  tg_model *m = tg__calloc(alloc, 1, sizeof *m);
  if (m == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", source);
  m->alloc = *alloc;
  m->format = tg_model_detect_format(data, length);
  tg_status st;
  switch (m->format) {
    case TG_MODEL_FORMAT_TFLITE:
      m->kind = TG_MODEL_GRAPH;
      st = tg_graph_parse_tflite_with(data, length, source, options, alloc, &m->graph, err);
      break;
    case TG_MODEL_FORMAT_ONNX:
      m->kind = TG_MODEL_GRAPH;
      st = tg_graph_parse_onnx(data, length, source, options, alloc, &m->graph, err);
      break;
    case TG_MODEL_FORMAT_RECORDS_CSV:
      m->kind = TG_MODEL_RECORDS;
      if (options != NULL && options->input_shape_count > 0) {
        st = tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                       "%s: holds usage records, which have no inputs to give shapes to", source);
        break;
      }
      st = tg_records_parse_csv(data, length, source, alloc, &m->records, err);
      break;
    default:
      m->kind = TG_MODEL_GRAPH;
      st = tg_graph_parse_text(data, length, source, alloc, &m->graph, err);
      if (st == TG_OK) st = tg__check_static_input_shapes(m->graph, options, err);
      break;
  }
  if (st != TG_OK) {
    tg_model_destroy(m);
    return st;
  }
  *out = m;
  return TG_OK;
}

tg_status tg_model_parse(const void *data, size_t length, const char *source,
                         const tg_allocator *alloc, tg_model **out, tg_error_info *err) {
  return tg_model_parse_with(data, length, source, NULL, alloc, out, err);
}

static tg_status parse_model(const char *data, size_t length, const char *path, const void *options,
                             const tg_allocator *alloc, void *out, tg_error_info *err) {
  return tg_model_parse_with(data, length, path, options, alloc, out, err);
}

tg_status tg_model_load_with(const char *path, const tg_model_options *options,
                             const tg_allocator *alloc, tg_model **out, tg_error_info *err) {
  if (out != NULL) *out = NULL;
  return tg__parse_file(path, NULL, parse_model, options, alloc, out, err);
}

tg_status tg_model_load(const char *path, const tg_allocator *alloc, tg_model **out,
                        tg_error_info *err) {
  return tg_model_load_with(path, NULL, alloc, out, err);
}
