/* The plain text graph format (docs/models.md):
 *
 *   # comment
 *   tensor NAME SHAPE DTYPE [input|output|constant]...
 *   op NAME inputs=A,B,... outputs=C,...
 *
 * Three passes over the text: count the lines of each kind, read tensors (building a name
 * index), read ops (resolving names). The text is never modified and need not end with NUL;
 * every token is a (pointer, length) slice of it. */
#include <stdio.h>
#include <string.h>

#include "model/model_internal.h"
#include "tangram/model.h"

static const char *const k_dtype_names[] = {
    "float32", "float16", "int32", "uint8", "int64", "string", "bool", "int16", "complex64",
    "int8", "float64", "complex128", "uint64", "resource", "variant", "uint32", "uint16", "int4"};
#define DTYPE_NAME_COUNT (sizeof k_dtype_names / sizeof k_dtype_names[0])

const char *tg_dtype_name(tg_dtype dtype) {
  if (dtype == TG_DTYPE_UNKNOWN) return "unknown";
  if ((unsigned)dtype >= DTYPE_NAME_COUNT) return NULL;
  return k_dtype_names[dtype];
}

tg_status tg_dtype_from_name(const char *name, tg_dtype *out) {
  if (name == NULL || out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < DTYPE_NAME_COUNT; ++i)
    if (strcmp(name, k_dtype_names[i]) == 0) {
      *out = (tg_dtype)i;
      return TG_OK;
    }
  if (strcmp(name, "unknown") == 0) {
    *out = TG_DTYPE_UNKNOWN;
    return TG_OK;
  }
  return TG_ERROR_INVALID_ARGUMENT;
}

/* ------------------------------------------------------------------------------------------ */

typedef struct slice {
  const char *p;
  size_t n;
} slice;

static int slice_eq(slice s, const char *lit) {
  size_t k = strlen(lit);
  return s.n == k && memcmp(s.p, lit, k) == 0;
}

static int slice_has(slice s, char c) { return s.n > 0 && memchr(s.p, c, s.n) != NULL; }

typedef struct text_reader {
  const char *text;
  size_t length;
  size_t pos;         /* start of the next line */
  size_t line_no;     /* 1-based number of the current line */
  slice line;         /* current line without comment and line ending */
  size_t cursor;      /* tokenizer position inside `line` */
  const char *source;
  tg_error_info *err;
} text_reader;

static tg_status text_fail(text_reader *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static tg_status text_fail(text_reader *r, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tg__error(r->err, TG_ERROR_PARSE, "%s:%zu: %s", r->source, r->line_no, msg);
}

static void reader_rewind(text_reader *r) {
  r->pos = 0;
  r->line_no = 0;
}

/* Advance to the next line; 0 at the end of the text. */
static int next_line(text_reader *r) {
  if (r->pos >= r->length) return 0;
  const char *start = r->text + r->pos;
  const char *nl = memchr(start, '\n', r->length - r->pos);
  size_t n = nl ? (size_t)(nl - start) : r->length - r->pos;
  r->pos += n + (nl != NULL);
  r->line_no++;
  const char *hash = memchr(start, '#', n);
  if (hash) n = (size_t)(hash - start);
  r->line.p = start;
  r->line.n = n;
  r->cursor = 0;
  return 1;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* Next whitespace-separated token of the current line; 0 when none is left. */
static int next_token(text_reader *r, slice *tok) {
  while (r->cursor < r->line.n && is_space(r->line.p[r->cursor])) r->cursor++;
  if (r->cursor >= r->line.n) return 0;
  size_t start = r->cursor;
  while (r->cursor < r->line.n && !is_space(r->line.p[r->cursor])) r->cursor++;
  tok->p = r->line.p + start;
  tok->n = r->cursor - start;
  return 1;
}

/* Tokens are printed with a bound so a huge token cannot push the line number out of the
 * message. */
#define TOK_FMT "'%.*s'"
#define TOK_ARG(s) (int)((s).n > 80 ? 80 : (s).n), (s).p

/* ------------------------------------------------------------------------------------------ */
/* Name index: open addressing over tensor indices. */

typedef struct name_index {
  int32_t *slots;   /* tensor index or -1 */
  size_t mask;
} name_index;

static uint64_t hash_bytes(const char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= (unsigned char)p[i];
    h *= 1099511628211ull;
  }
  return h;
}

/* Slot for `name`: the one holding it, or the empty one where it would go. */
static size_t index_find(const name_index *ix, const tg_graph *g, slice name) {
  size_t i = (size_t)hash_bytes(name.p, name.n) & ix->mask;
  for (;;) {
    int32_t t = ix->slots[i];
    if (t < 0) return i;
    const char *s = g->tensors[t].name;
    if (strlen(s) == name.n && memcmp(s, name.p, name.n) == 0) return i;
    i = (i + 1) & ix->mask;
  }
}

/* ------------------------------------------------------------------------------------------ */

static tg_status parse_shape(text_reader *r, slice s, tg_tensor *t) {
  t->rank = 0;
  if (slice_eq(s, "scalar")) return TG_OK;
  uint64_t elements = 1;
  size_t i = 0;
  for (;;) {
    size_t start = i;
    uint64_t v = 0;
    if (i < s.n && s.p[i] == '-')
      return text_fail(r, "shape " TOK_FMT ": dimension %u is negative", TOK_ARG(s), t->rank);
    while (i < s.n && s.p[i] >= '0' && s.p[i] <= '9') {
      if (!tg__mul_u64(v, 10, &v) || !tg__add_u64(v, (uint64_t)(s.p[i] - '0'), &v) ||
          v > (uint64_t)INT64_MAX)
        return text_fail(r, "shape " TOK_FMT ": dimension %u is too large", TOK_ARG(s), t->rank);
      ++i;
    }
    if (i == start)
      return text_fail(r, "shape " TOK_FMT ": expected a dimension (a non-negative integer) at character %zu; write e.g. 1x56x56x24, or 'scalar'",
                       TOK_ARG(s), i + 1);
    if (t->rank == TG_MAX_RANK)
      return text_fail(r, "shape " TOK_FMT ": rank exceeds the maximum of %d", TOK_ARG(s),
                       TG_MAX_RANK);
    t->shape[t->rank++] = (int64_t)v;
    if (!tg__mul_u64(elements, v, &elements) || elements > (uint64_t)INT64_MAX)
      return text_fail(r, "shape " TOK_FMT ": more elements than fit in 63 bits", TOK_ARG(s));
    if (i == s.n) return TG_OK;
    if (s.p[i] != 'x')
      return text_fail(r, "shape " TOK_FMT ": unexpected character '%c' at %zu; dimensions are separated by 'x'",
                       TOK_ARG(s), s.p[i], i + 1);
    ++i;
  }
}

static tg_status check_tensor_name(text_reader *r, slice name) {
  if (slice_eq(name, "-") || slice_has(name, ',') || slice_has(name, '='))
    return text_fail(r, "invalid tensor name " TOK_FMT ": names may not be '-' or contain ',' or '='",
                     TOK_ARG(name));
  return TG_OK;
}

static tg_status read_tensor_line(text_reader *r, tg_graph *g, size_t index, name_index *ix,
                                  size_t *line_of) {
  slice name, shape, dtype, flag;
  tg_tensor *t = &g->tensors[index];
  tg_status st;
  if (!next_token(r, &name) || !next_token(r, &shape) || !next_token(r, &dtype))
    return text_fail(r, "expected: tensor NAME SHAPE DTYPE [input|output|constant]...");
  if ((st = check_tensor_name(r, name)) != TG_OK) return st;
  size_t slot = index_find(ix, g, name);
  if (ix->slots[slot] >= 0)
    return text_fail(r, "tensor " TOK_FMT " is already declared on line %zu", TOK_ARG(name),
                     line_of[ix->slots[slot]]);
  if ((st = parse_shape(r, shape, t)) != TG_OK) return st;
  unsigned i;
  for (i = 0; i < DTYPE_NAME_COUNT; ++i)
    if (slice_eq(dtype, k_dtype_names[i])) break;
  if (i == DTYPE_NAME_COUNT)
    return text_fail(r, "unknown dtype " TOK_FMT " (expected float32, float16, int32, int8, uint8, int16, int64, bool, ...)",
                     TOK_ARG(dtype));
  t->dtype = (tg_dtype)i;
  while (next_token(r, &flag)) {
    if (slice_eq(flag, "input")) t->flags |= TG_TENSOR_INPUT;
    else if (slice_eq(flag, "output")) t->flags |= TG_TENSOR_OUTPUT;
    else if (slice_eq(flag, "constant")) t->flags |= TG_TENSOR_CONSTANT;
    else
      return text_fail(r, "unknown tensor flag " TOK_FMT " (expected input, output or constant)",
                       TOK_ARG(flag));
  }
  if ((t->flags & TG_TENSOR_INPUT) && (t->flags & TG_TENSOR_CONSTANT))
    return text_fail(r, "tensor " TOK_FMT " cannot be both an input and a constant", TOK_ARG(name));
  t->name = tg__strndup(&g->alloc, name.p, name.n);
  if (t->name == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  ix->slots[slot] = (int32_t)index;
  line_of[index] = r->line_no;
  return TG_OK;
}

/* Resolve a comma-separated list of tensor names into a new array. */
static tg_status read_name_list(text_reader *r, tg_graph *g, const name_index *ix, slice list,
                                int allow_absent, const char *key, int32_t **out,
                                uint32_t *count) {
  size_t n = 0;
  *out = NULL;
  *count = 0;
  if (list.n > 0) {
    n = 1;
    for (size_t i = 0; i < list.n; ++i) n += list.p[i] == ',';
  }
  if (n > UINT32_MAX) return text_fail(r, "too many %s", key);
  int32_t *a = tg__calloc(&g->alloc, n ? n : 1, sizeof *a);
  if (a == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  *out = a;  /* owned by the op from here, freed with the graph */
  size_t k = 0, start = 0;
  for (size_t i = 0; i <= list.n && n > 0; ++i) {
    if (i < list.n && list.p[i] != ',') continue;
    slice name = {list.p + start, i - start};
    start = i + 1;
    if (name.n == 0) return text_fail(r, "%s: empty name in the list", key);
    if (slice_eq(name, "-")) {
      if (!allow_absent)
        return text_fail(r, "%s: '-' (absent) is allowed only among inputs", key);
      a[k++] = -1;
      continue;
    }
    size_t slot = index_find(ix, g, name);
    if (ix->slots[slot] < 0)
      return text_fail(r, "%s: unknown tensor " TOK_FMT, key, TOK_ARG(name));
    a[k++] = ix->slots[slot];
  }
  *count = (uint32_t)n;
  return TG_OK;
}

/* Op order is execution order: every input must be a graph input, a constant or the output
 * of an earlier op, and no tensor is written twice. tg_graph_compute_lifetimes checks the same
 * rules; checking here too lets the message carry the line. `writer[t]`: 1 + the line that
 * wrote tensor t, 0 if none yet. */
static tg_status check_order(text_reader *r, const tg_graph *g, size_t index, size_t *writer) {
  const tg_op *op = &g->ops[index];
  for (uint32_t k = 0; k < op->input_count; ++k) {
    int32_t t = op->inputs[k];
    if (t < 0) continue;
    const tg_tensor *tensor = &g->tensors[t];
    if (writer[t] == 0 && !(tensor->flags & (TG_TENSOR_INPUT | TG_TENSOR_CONSTANT))) {
      return tg__error(r->err, TG_ERROR_GRAPH,
                       "%s:%zu: op %zu (%.80s) reads tensor '%.80s' before it is written (not an input, not constant, and no earlier op writes it)",
                       r->source, r->line_no, index, op->name, tensor->name);
    }
  }
  for (uint32_t k = 0; k < op->output_count; ++k) {
    int32_t t = op->outputs[k];
    const tg_tensor *tensor = &g->tensors[t];
    if (writer[t] != 0)
      return tg__error(r->err, TG_ERROR_GRAPH,
                       "%s:%zu: op %zu (%.80s) writes tensor '%.80s', already written on line %zu",
                       r->source, r->line_no, index, op->name, tensor->name, writer[t] - 1);
    if (tensor->flags & (TG_TENSOR_INPUT | TG_TENSOR_CONSTANT))
      return tg__error(r->err, TG_ERROR_GRAPH,
                       "%s:%zu: op %zu (%.80s) writes tensor '%.80s', which is a graph %s",
                       r->source, r->line_no, index, op->name, tensor->name,
                       (tensor->flags & TG_TENSOR_INPUT) ? "input" : "constant");
    writer[t] = r->line_no + 1;
  }
  return TG_OK;
}

static tg_status read_op_line(text_reader *r, tg_graph *g, size_t index, const name_index *ix) {
  tg_op *op = &g->ops[index];
  slice name, tok;
  tg_status st;
  int have_in = 0, have_out = 0;
  if (!next_token(r, &name)) return text_fail(r, "expected: op NAME inputs=A,B outputs=C");
  if (slice_has(name, '='))
    return text_fail(r, "expected an op name before " TOK_FMT, TOK_ARG(name));
  op->name = tg__strndup(&g->alloc, name.p, name.n);
  if (op->name == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  while (next_token(r, &tok)) {
    if (tok.n >= 7 && memcmp(tok.p, "inputs=", 7) == 0) {
      if (have_in) return text_fail(r, "inputs= given twice");
      have_in = 1;
      slice list = {tok.p + 7, tok.n - 7};
      st = read_name_list(r, g, ix, list, 1, "inputs", &op->inputs, &op->input_count);
    } else if (tok.n >= 8 && memcmp(tok.p, "outputs=", 8) == 0) {
      if (have_out) return text_fail(r, "outputs= given twice");
      have_out = 1;
      slice list = {tok.p + 8, tok.n - 8};
      st = read_name_list(r, g, ix, list, 0, "outputs", &op->outputs, &op->output_count);
    } else {
      return text_fail(r, "unexpected " TOK_FMT " (expected inputs=... or outputs=...)",
                       TOK_ARG(tok));
    }
    if (st != TG_OK) return st;
  }
  if (!have_in || !have_out)
    return text_fail(r, "op " TOK_FMT " needs both inputs= and outputs= (either list may be empty)",
                     TOK_ARG(name));
  /* tg_graph_destroy frees NULL arrays fine, but consumers expect arrays when counts are 0. */
  if (op->inputs == NULL) op->inputs = tg__calloc(&g->alloc, 1, sizeof *op->inputs);
  if (op->outputs == NULL) op->outputs = tg__calloc(&g->alloc, 1, sizeof *op->outputs);
  if (op->inputs == NULL || op->outputs == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  return TG_OK;
}

/* Graph input/output lists from the flags, in declaration order. */
static tg_status collect_io(tg_graph *g) {
  size_t ni = 0, no = 0;
  for (size_t t = 0; t < g->tensor_count; ++t) {
    ni += (g->tensors[t].flags & TG_TENSOR_INPUT) != 0;
    no += (g->tensors[t].flags & TG_TENSOR_OUTPUT) != 0;
  }
  g->inputs = tg__calloc(&g->alloc, ni ? ni : 1, sizeof *g->inputs);
  g->outputs = tg__calloc(&g->alloc, no ? no : 1, sizeof *g->outputs);
  if (g->inputs == NULL || g->outputs == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t t = 0; t < g->tensor_count; ++t) {
    if (g->tensors[t].flags & TG_TENSOR_INPUT) g->inputs[g->input_count++] = (uint32_t)t;
    if (g->tensors[t].flags & TG_TENSOR_OUTPUT) g->outputs[g->output_count++] = (uint32_t)t;
  }
  return TG_OK;
}

tg_status tg_graph_parse_text(const char *text, size_t length, const char *source,
                              const tg_allocator *alloc, tg_graph **out, tg_error_info *err) {
  if (out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = NULL;
  if (text == NULL && length > 0)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "text is NULL");
  alloc = tg__alloc_or_default(alloc);
  text_reader r = {.text = text, .length = length, .source = source ? source : "<memory>", .err = err};

  /* Pass 1: count, and reject unknown line kinds early. */
  size_t tensors = 0, ops = 0;
  slice kw;
  while (next_line(&r)) {
    /* Names become C strings: a NUL inside one would silently cut it short. */
    if (memchr(r.line.p, '\0', r.line.n) != NULL)
      return text_fail(&r, "the line contains a NUL byte (is this a text file?)");
    if (!next_token(&r, &kw)) continue;
    if (slice_eq(kw, "tensor")) ++tensors;
    else if (slice_eq(kw, "op")) ++ops;
    else return text_fail(&r, "unknown line kind " TOK_FMT " (expected 'tensor' or 'op')", TOK_ARG(kw));
  }
  /* Indices are int32 in tg_op. */
  if (tensors > (size_t)INT32_MAX) return text_fail(&r, "too many tensors (%zu)", tensors);

  tg_graph *g = NULL;
  name_index ix = {NULL, 0};
  size_t *line_of = NULL;
  tg_status st = tg_graph_create(tensors, ops, alloc, &g);
  if (st != TG_OK) return tg__error(err, st, "%s: out of memory", r.source);
  size_t slots = 16;
  while (slots < 2 * tensors) slots *= 2;
  ix.slots = tg__malloc(alloc, slots * sizeof *ix.slots);
  ix.mask = slots - 1;
  line_of = tg__calloc(alloc, tensors ? tensors : 1, sizeof *line_of);
  g->source = tg__strdup(alloc, r.source);
  if (ix.slots == NULL || line_of == NULL || g->source == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  for (size_t i = 0; i < slots; ++i) ix.slots[i] = -1;

  /* Pass 2: tensors. */
  reader_rewind(&r);
  size_t ti = 0, oi = 0;
  while (st == TG_OK && next_line(&r))
    if (next_token(&r, &kw) && slice_eq(kw, "tensor"))
      st = read_tensor_line(&r, g, ti++, &ix, line_of);
  /* Pass 3: ops. line_of now serves as the writer table of check_order. */
  if (st == TG_OK) memset(line_of, 0, (tensors ? tensors : 1) * sizeof *line_of);
  reader_rewind(&r);
  while (st == TG_OK && next_line(&r))
    if (next_token(&r, &kw) && slice_eq(kw, "op")) {
      st = read_op_line(&r, g, oi, &ix);
      if (st == TG_OK) st = check_order(&r, g, oi, line_of);
      ++oi;
    }
  if (st == TG_OK) st = collect_io(g);

done:
  tg__free(alloc, ix.slots);
  tg__free(alloc, line_of);
  if (st != TG_OK) {
    if (st == TG_ERROR_OUT_OF_HOST_MEMORY) tg__error(err, st, "%s: out of memory", r.source);
    tg_graph_destroy(g);
    return st;
  }
  *out = g;
  return TG_OK;
}

tg_status tg_graph_read_text(const char *path, const tg_allocator *alloc, tg_graph **out,
                             tg_error_info *err) {
  return tg__graph_read_file(path, tg_graph_parse_text, alloc, out, err);
}
