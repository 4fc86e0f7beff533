/* Listing a model's graph inputs without loading it (tg_model_list_inputs): what an engine asks
 * before it knows which sizes to put in tg_model_options.input_shapes. */
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"
#include "tangram/model.h"
#ifdef TANGRAM_HAVE_ONNX
#include "model/onnx_internal.h"
#endif

/* A list of `count` zeroed entries. */
static tg_status inputs_create(tg_model_format format, size_t count, const tg_allocator *alloc,
                               tg_model_inputs **out) {
  tg_model_inputs *l = tg__calloc(alloc, 1, sizeof *l);
  if (l == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  l->alloc = *alloc;
  l->format = format;
  l->inputs = tg__calloc(alloc, count ? count : 1, sizeof *l->inputs);
  if (l->inputs == NULL) {
    tg__free(alloc, l);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  l->count = count;
  *out = l;
  return TG_OK;
}

void tg_model_inputs_destroy(tg_model_inputs *l) {
  if (l == NULL) return;
  tg_allocator a = l->alloc;
  for (size_t k = 0; k < l->count; ++k) {
    tg__free(&a, (char *)l->inputs[k].name);
    for (uint32_t d = 0; d < TG_MAX_RANK; ++d) tg__free(&a, (char *)l->inputs[k].dim_names[d]);
  }
  tg__free(&a, l->inputs);
  tg__free(&a, l);
}

/* The inputs of a graph read without resolving its dynamic dimensions: `dynamic` per tensor
 * (NULL: every shape static, as in text graphs). */
static tg_status from_graph(const tg_graph *g, const tg__tflite_dims *dynamic, tg_model_format format,
                            const tg_allocator *alloc, tg_model_inputs **out) {
  tg_status st = inputs_create(format, g->input_count, alloc, out);
  if (st != TG_OK) return st;
  for (size_t k = 0; k < g->input_count; ++k) {
    const tg_tensor *t = &g->tensors[g->inputs[k]];
    tg_model_input *in = &(*out)->inputs[k];
    in->name = tg__strdup(alloc, t->name);
    if (in->name == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    in->dtype = t->dtype;
    in->has_shape = 1;
    in->rank = t->rank;
    uint8_t dyn = dynamic ? dynamic[g->inputs[k]].dynamic : 0;
    uint8_t unrecorded = dynamic ? dynamic[g->inputs[k]].unrecorded : 0;
    in->dynamic = dyn;
    in->needs_shape = (dyn & unrecorded) != 0;
    for (uint32_t d = 0; d < t->rank; ++d) in->dims[d] = ((unrecorded >> d) & 1u) ? -1 : t->shape[d];
  }
  return TG_OK;
}

#ifdef TANGRAM_HAVE_ONNX
static int name_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether `name` is in `sorted` (the initializers' names, sorted): O(log n) per input, so a
 * model that lists thousands of initializers as inputs too is not quadratic. */
static int is_initializer(const char *const *sorted, size_t n, const char *name) {
  return n > 0 && bsearch(&name, sorted, n, sizeof *sorted, name_cmp) != NULL;
}

static tg_status onnx_input(onnx_ctx *c, const Onnx__ValueInfoProto *vi, size_t index, tg_model_input *in) {
  if (vi->name == NULL || vi->name[0] == '\0')
    return onnx_fail(c, TG_ERROR_PARSE, "graph input %zu has no name", index);
  in->name = tg__strdup(c->alloc, vi->name);
  if (in->name == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  const Onnx__TypeProto *tp = vi->type;
  if (tp == NULL || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || tp->tensor_type == NULL)
    return onnx_fail(c, TG_ERROR_UNSUPPORTED,
                     "input '%s' is not a tensor (sequences, maps and optionals are not supported)", vi->name);
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  in->dtype = onnx_dtype(tt->has_elem_type ? tt->elem_type : ONNX_UNDEFINED);
  if (tt->shape == NULL) {
    in->needs_shape = 1;
    return TG_OK;
  }
  const Onnx__TensorShapeProto *sp = tt->shape;
  if (sp->n_dim > TG_MAX_RANK)
    return onnx_fail(c, TG_ERROR_UNSUPPORTED, "input '%s' has rank %zu, more than %d", vi->name, sp->n_dim,
                     TG_MAX_RANK);
  in->has_shape = 1;
  in->rank = (uint32_t)sp->n_dim;
  for (uint32_t d = 0; d < in->rank; ++d) {
    const Onnx__TensorShapeProto__Dimension *dim = sp->dim[d];
    if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
      if (dim->dim_value < 0 || dim->dim_value > ONNX_MAX_DIM)
        return onnx_fail(c, TG_ERROR_PARSE, "input '%s': dimension %u is %lld", vi->name, d,
                         (long long)dim->dim_value);
      in->dims[d] = dim->dim_value;
      continue;
    }
    in->dims[d] = -1;
    in->dynamic |= 1u << d;
    in->needs_shape = 1;
    if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dim->dim_param != NULL &&
        dim->dim_param[0] != '\0') {
      in->dim_names[d] = tg__strdup(c->alloc, dim->dim_param);
      if (in->dim_names[d] == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    }
  }
  return TG_OK;
}

static tg_status onnx_inputs(const void *data, size_t length, const char *source, const tg_allocator *alloc,
                             tg_model_inputs **out, tg_error_info *err) {
  onnx_ctx c = {.source = source, .err = err, .alloc = alloc};
  c.arena.alloc = alloc;
  onnx_decoded *d = NULL;
  const Onnx__ModelProto *m = NULL;
  tg_status st = onnx_decode(&c, data, length, &d, &m);
  if (st == TG_OK && m->graph == NULL) st = onnx_fail(&c, TG_ERROR_PARSE, "the model has no graph");
  if (st == TG_OK) {
    const Onnx__GraphProto *gp = m->graph;
    const char **sorted = onnx_arena_alloc(&c.arena, (gp->n_initializer ? gp->n_initializer : 1) * sizeof *sorted);
    size_t ni = 0;
    if (sorted == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
    for (size_t k = 0; st == TG_OK && k < gp->n_initializer; ++k)
      if (gp->initializer[k]->name != NULL) sorted[ni++] = gp->initializer[k]->name;
    if (st == TG_OK) qsort(sorted, ni, sizeof *sorted, name_cmp);
    size_t count = 0;
    for (size_t k = 0; st == TG_OK && k < gp->n_input; ++k)
      count += gp->input[k]->name == NULL || !is_initializer(sorted, ni, gp->input[k]->name);
    if (st == TG_OK) st = inputs_create(TG_MODEL_FORMAT_ONNX, count, alloc, out);
    size_t n = 0;
    for (size_t k = 0; st == TG_OK && k < gp->n_input; ++k) {
      const Onnx__ValueInfoProto *vi = gp->input[k];
      if (vi->name != NULL && is_initializer(sorted, ni, vi->name)) continue;
      st = onnx_input(&c, vi, k, &(*out)->inputs[n++]);
    }
  }
  onnx_decoded_free(d, alloc);
  onnx_arena_free(&c.arena);
  return st;
}
#endif

tg_status tg_model_parse_inputs(const void *data, size_t length, const char *source,
                                const tg_allocator *alloc, tg_model_inputs **out,
                                tg_error_info *err) {
  if (out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "tg_model_parse_inputs: out is NULL");
  *out = NULL;
  if (data == NULL && length > 0)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "tg_model_parse_inputs: data is NULL");
  alloc = tg__alloc_or_default(alloc);
  if (source == NULL) source = "<memory>";
  tg_model_format format = tg_model_detect_format(data, length);
  tg_graph *g = NULL;
  tg__tflite_dims *dynamic = NULL;
  tg_status st;
  switch (format) {
    case TG_MODEL_FORMAT_TFLITE:
      st = tg__tflite_parse_unresolved(data, length, source, alloc, &g, &dynamic, err);
      if (st == TG_OK) st = from_graph(g, dynamic, format, alloc, out);
      break;
    case TG_MODEL_FORMAT_ONNX:
#ifdef TANGRAM_HAVE_ONNX
      st = onnx_inputs(data, length, source, alloc, out, err);
#else
      st = tg__error(err, TG_ERROR_UNSUPPORTED,
                     "%s: this build of Tangram reads no .onnx files (configured with TANGRAM_ONNX=OFF)", source);
#endif
      break;
    case TG_MODEL_FORMAT_RECORDS_CSV:
      st = inputs_create(format, 0, alloc, out);
      break;
    default:
      st = tg_graph_parse_text(data, length, source, alloc, &g, err);
      if (st == TG_OK) st = from_graph(g, NULL, format, alloc, out);
      break;
  }
  tg__free(alloc, dynamic);
  tg_graph_destroy(g);
  if (st != TG_OK) {
    if (st == TG_ERROR_OUT_OF_HOST_MEMORY) tg__error(err, st, "%s: out of memory listing the inputs", source);
    tg_model_inputs_destroy(*out);
    *out = NULL;
  }
  return st;
}

static tg_status parse_inputs(const char *data, size_t length, const char *path, const void *user,
                              const tg_allocator *alloc, void *out, tg_error_info *err) {
  (void)user;
  return tg_model_parse_inputs(data, length, path, alloc, out, err);
}

tg_status tg_model_list_inputs(const char *path, const tg_allocator *alloc, tg_model_inputs **out,
                               tg_error_info *err) {
  if (out != NULL) *out = NULL;
  return tg__parse_file(path, "tg_model_list_inputs", parse_inputs, NULL, alloc, out, err);
}
