/* Loading a model file of any supported format. */
#include <string.h>

#include "model/model_internal.h"
#include "tangram/model.h"

const char *tg_model_format_name(tg_model_format format) {
  switch (format) {
    case TG_MODEL_FORMAT_TFLITE: return "tflite";
    case TG_MODEL_FORMAT_RECORDS_CSV: return "csv";
    case TG_MODEL_FORMAT_TEXT_GRAPH: return "text";
    default: return NULL;
  }
}

static int starts_with(const char *p, size_t n, const char *prefix) {
  size_t k = strlen(prefix);
  return n >= k && memcmp(p, prefix, k) == 0;
}

tg_model_format tg_model_detect_format(const void *data, size_t length) {
  const char *p = data;
  if (p == NULL) return TG_MODEL_FORMAT_TEXT_GRAPH;
  if (length >= 8 && memcmp(p + 4, "TFL3", 4) == 0) return TG_MODEL_FORMAT_TFLITE;
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

tg_status tg_model_parse(const void *data, size_t length, const char *source,
                         const tg_allocator *alloc, tg_model **out, tg_error_info *err) {
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
      st = tg_graph_parse_tflite(data, length, source, alloc, &m->graph, err);
      break;
    case TG_MODEL_FORMAT_RECORDS_CSV:
      m->kind = TG_MODEL_RECORDS;
      st = tg_records_parse_csv(data, length, source, alloc, &m->records, err);
      break;
    default:
      m->kind = TG_MODEL_GRAPH;
      st = tg_graph_parse_text(data, length, source, alloc, &m->graph, err);
      break;
  }
  if (st != TG_OK) {
    tg_model_destroy(m);
    return st;
  }
  *out = m;
  return TG_OK;
}

tg_status tg_model_load(const char *path, const tg_allocator *alloc, tg_model **out,
                        tg_error_info *err) {
  if (out == NULL || path == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "path or out is NULL");
  *out = NULL;
  alloc = tg__alloc_or_default(alloc);
  char *data;
  size_t length;
  tg_status st = tg__read_file(path, alloc, &data, &length, err);
  if (st != TG_OK) return st;
  st = tg_model_parse(data, length, path, alloc, out, err);
  tg__free(alloc, data);
  return st;
}
