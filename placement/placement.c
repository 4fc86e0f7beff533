/* Placements: processor names, the default profile, placement specs and place files. */
#include "tangram/placement.h"

#include <string.h>

#include "core/internal.h"

static const char *const k_processor_names[TG_PROCESSOR_COUNT] = {"gpu", "cpu"};
static const char *const k_space_names[TG_SPACE_COUNT] = {"device", "host", "shared"};

const char *tg_processor_name(tg_processor p) {
  return (unsigned)p < TG_PROCESSOR_COUNT ? k_processor_names[p] : NULL;
}

tg_status tg_processor_from_name(const char *name, tg_processor *out) {
  if (name == NULL || out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < TG_PROCESSOR_COUNT; ++i)
    if (strcmp(name, k_processor_names[i]) == 0) {
      *out = (tg_processor)i;
      return TG_OK;
    }
  return TG_ERROR_INVALID_ARGUMENT;
}

const char *tg_space_name(tg_space s) {
  return (unsigned)s < TG_SPACE_COUNT ? k_space_names[s] : NULL;
}

/* The builtin ops of TFLite's GPU delegate (its OpenCL and OpenGL/Vulkan paths), in
 * alphabetical order; docs/heterogeneous.md lists the same set. */
static const char *const k_gpu_ops[] = {
    "ABS",           "ADD",
    "AVERAGE_POOL_2D", "BATCH_MATMUL",
    "CONCATENATION", "CONV_2D",
    "COS",           "CUMSUM",
    "DENSIFY",       "DEPTH_TO_SPACE",
    "DEPTHWISE_CONV_2D", "DEQUANTIZE",
    "DIV",           "ELU",
    "EQUAL",         "EXP",
    "FLOOR",         "FLOOR_DIV",
    "FLOOR_MOD",     "FULLY_CONNECTED",
    "GATHER",        "GREATER",
    "GREATER_EQUAL", "HARD_SWISH",
    "LEAKY_RELU",    "LESS",
    "LESS_EQUAL",    "LOG",
    "LOGISTIC",      "LOG_SOFTMAX",
    "LSTM",          "MAXIMUM",
    "MAX_POOL_2D",   "MEAN",
    "MINIMUM",       "MIRROR_PAD",
    "MUL",           "NEG",
    "NOT_EQUAL",     "ONE_HOT",
    "PACK",          "PAD",
    "PADV2",         "POW",
    "PRELU",         "QUANTIZE",
    "REDUCE_MAX",    "REDUCE_MIN",
    "REDUCE_PROD",   "RELU",
    "RELU6",         "RELU_N1_TO_1",
    "RESHAPE",       "RESIZE_BILINEAR",
    "RESIZE_NEAREST_NEIGHBOR", "RSQRT",
    "SELECT_V2",     "SIN",
    "SLICE",         "SOFTMAX",
    "SPACE_TO_DEPTH", "SPLIT",
    "SPLIT_V",       "SQRT",
    "SQUARE",        "SQUARED_DIFFERENCE",
    "STRIDED_SLICE", "SUB",
    "SUM",           "TANH",
    "TILE",          "TRANSPOSE",
    "TRANSPOSE_CONV",
};

int tg_placement_gpu_supports(const char *op_name) {
  if (op_name == NULL) return 0;
  for (size_t i = 0; i < sizeof k_gpu_ops / sizeof k_gpu_ops[0]; ++i)
    if (strcmp(op_name, k_gpu_ops[i]) == 0) return 1;
  return 0;
}

static const char *op_name(const tg_graph *g, size_t op) {
  return g->ops[op].name ? g->ops[op].name : "";
}

tg_status tg_placement_apply_spec(const tg_graph *g, const char *spec, tg_processor *processor_of,
                                  tg_error_info *err) {
  if (g == NULL || spec == NULL || (processor_of == NULL && g->op_count > 0))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "placement: missing graph, spec or output");
  size_t n = g->op_count;
  if (strcmp(spec, "auto") == 0) {
    for (size_t i = 0; i < n; ++i)
      processor_of[i] = tg_placement_gpu_supports(g->ops[i].name) ? TG_PROCESSOR_GPU : TG_PROCESSOR_CPU;
    return TG_OK;
  }
  if (strcmp(spec, "gpu") == 0) {
    for (size_t i = 0; i < n; ++i) processor_of[i] = TG_PROCESSOR_GPU;
    return TG_OK;
  }
  if (strncmp(spec, "cpu:", 4) != 0)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                     "placement '%s': expected auto, gpu, or cpu:TYPE[,TYPE...] (cpu:* for every op)",
                     spec);
  const char *list = spec + 4;
  if (strcmp(list, "*") == 0) {
    for (size_t i = 0; i < n; ++i) processor_of[i] = TG_PROCESSOR_CPU;
    return TG_OK;
  }
  /* Check every TYPE first, so that a failure leaves the placement untouched. */
  for (const char *p = list;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == 0)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "placement '%s': empty op type in the list",
                       spec);
    int found = 0;
    for (size_t i = 0; i < n && !found; ++i) {
      const char *name = op_name(g, i);
      found = strlen(name) == len && memcmp(name, p, len) == 0;
    }
    if (!found)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                       "placement '%s': no op of the graph has type '%.*s'", spec, (int)(len > 200 ? 200 : len), p);
    if (comma == NULL) break;
    p = comma + 1;
  }
  for (size_t i = 0; i < n; ++i) {
    const char *name = op_name(g, i);
    size_t nl = strlen(name);
    tg_processor proc = TG_PROCESSOR_GPU;
    for (const char *p = list;;) {
      const char *comma = strchr(p, ',');
      size_t len = comma ? (size_t)(comma - p) : strlen(p);
      if (len == nl && memcmp(name, p, len) == 0) {
        proc = TG_PROCESSOR_CPU;
        break;
      }
      if (comma == NULL) break;
      p = comma + 1;
    }
    processor_of[i] = proc;
  }
  return TG_OK;
}

/* ---- place files ---- */

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* One line [p, end) without its newline: its op and processor. Applies into `work`. */
static tg_status parse_line(const tg_graph *g, const char *p, const char *end, const char *source,
                            size_t line, tg_processor *work, tg_error_info *err) {
  /* Comments and surrounding blanks. */
  for (const char *q = p; q < end; ++q)
    if (*q == '#') {
      end = q;
      break;
    }
  while (p < end && is_space(*p)) ++p;
  while (end > p && is_space(end[-1])) --end;
  if (p == end) return TG_OK;
  /* The processor is the last token: after the last blank, '=' or ','. */
  const char *tok = end;
  while (tok > p && !is_space(tok[-1]) && tok[-1] != '=' && tok[-1] != ',') --tok;
  if (tok == p)
    return tg__error(err, TG_ERROR_PARSE, "%s:%zu: expected 'OP PROCESSOR' (PROCESSOR gpu or cpu)",
                     source, line);
  size_t tlen = (size_t)(end - tok);
  tg_processor proc;
  if (tlen == 3 && memcmp(tok, "gpu", 3) == 0) proc = TG_PROCESSOR_GPU;
  else if (tlen == 3 && memcmp(tok, "cpu", 3) == 0) proc = TG_PROCESSOR_CPU;
  else
    return tg__error(err, TG_ERROR_PARSE, "%s:%zu: unknown processor '%.*s' (expected gpu or cpu)",
                     source, line, (int)(tlen > 64 ? 64 : tlen), tok);
  /* The op: what precedes, without the separator ("->", '=', ',') and blanks. */
  const char *oend = tok;
  while (oend > p && is_space(oend[-1])) --oend;
  if (oend > p && (oend[-1] == '=' || oend[-1] == ',')) --oend;
  else if (oend - p >= 2 && oend[-1] == '>' && oend[-2] == '-') oend -= 2;
  while (oend > p && is_space(oend[-1])) --oend;
  if (oend == p)
    return tg__error(err, TG_ERROR_PARSE, "%s:%zu: no op before the processor", source, line);
  size_t olen = (size_t)(oend - p);
  int digits = 1;
  for (const char *q = p; q < oend && digits; ++q) digits = *q >= '0' && *q <= '9';
  if (digits) {
    uint64_t index = 0;
    for (const char *q = p; q < oend; ++q)
      if (!tg__mul_u64(index, 10, &index) || !tg__add_u64(index, (uint64_t)(*q - '0'), &index)) {
        index = UINT64_MAX;
        break;
      }
    if (index >= g->op_count)
      return tg__error(err, TG_ERROR_PARSE, "%s:%zu: op %.*s is out of range (the graph has %zu ops)",
                       source, line, (int)(olen > 32 ? 32 : olen), p, g->op_count);
    work[index] = proc;
    return TG_OK;
  }
  size_t matched = 0;
  for (size_t i = 0; i < g->op_count; ++i) {
    const char *name = op_name(g, i);
    if (strlen(name) == olen && memcmp(name, p, olen) == 0) {
      work[i] = proc;
      ++matched;
    }
  }
  if (matched == 0)
    return tg__error(err, TG_ERROR_PARSE, "%s:%zu: no op of the graph is named '%.*s'", source, line,
                     (int)(olen > 200 ? 200 : olen), p);
  return TG_OK;
}

tg_status tg_placement_parse(const tg_graph *g, const char *text, size_t length, const char *source,
                             tg_processor *processor_of, tg_error_info *err) {
  if (g == NULL || (text == NULL && length > 0) || (processor_of == NULL && g->op_count > 0))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "placement: missing graph, text or output");
  if (source == NULL) source = "(place file)";
  for (size_t i = 0; i < g->op_count; ++i)
    if ((unsigned)processor_of[i] >= TG_PROCESSOR_COUNT)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "placement: op %zu has processor %d", i,
                       (int)processor_of[i]);
  /* Work on a copy so that a failure leaves the caller's placement untouched. */
  tg_processor *work = NULL;
  const tg_allocator *a = &g->alloc;
  if (g->op_count) {
    work = tg__malloc(a, g->op_count * sizeof *work);
    if (work == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "placement: out of host memory");
    memcpy(work, processor_of, g->op_count * sizeof *work);
  }
  tg_status st = TG_OK;
  size_t line = 1;
  const char *p = text, *end = text + length;
  while (p < end && st == TG_OK) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    if (memchr(p, '\0', (size_t)(le - p)) != NULL)
      st = tg__error(err, TG_ERROR_PARSE, "%s:%zu: NUL byte in the line", source, line);
    else
      st = parse_line(g, p, le, source, line, work, err);
    p = nl ? nl + 1 : end;
    ++line;
  }
  if (st == TG_OK && g->op_count) memcpy(processor_of, work, g->op_count * sizeof *work);
  tg__free(a, work);
  return st;
}

tg_status tg_placement_read_file(const tg_graph *g, const char *path, const tg_allocator *alloc,
                                 tg_processor *processor_of, tg_error_info *err) {
  if (g == NULL || path == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "placement: missing graph or path");
  alloc = tg__alloc_or_default(alloc);
  char *data = NULL;
  size_t length = 0;
  tg_status st = tg__read_file(path, alloc, &data, &length, err);
  if (st != TG_OK) return st;
  st = tg_placement_parse(g, data, length, path, processor_of, err);
  tg__free(alloc, data);
  return st;
}
