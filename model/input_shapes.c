/* Input shapes given to the readers (tg_model_options): checks shared by every format. */
#include <stdio.h>

#include "model/model_internal.h"
#include "tangram/model.h"

void tg__shape_text(const int64_t *dims, uint32_t rank, char *buf, size_t size) {
  size_t n = 0;
  if (size == 0) return;
  buf[0] = '\0';
  if (rank == 0) {
    snprintf(buf, size, "scalar");
    return;
  }
  for (uint32_t k = 0; k < rank && n + 1 < size; ++k) {
    int w = dims[k] < 0 ? snprintf(buf + n, size - n, "%s?", k ? "x" : "")
                        : snprintf(buf + n, size - n, "%s%lld", k ? "x" : "", (long long)dims[k]);
    if (w < 0) break;
    n += (size_t)w < size - n ? (size_t)w : size - n - 1;
  }
}

tg_status tg__check_input_shapes(const char *source, const tg_model_options *o, tg_error_info *err) {
  if (o == NULL || o->input_shape_count == 0) return TG_OK;
  if (o->input_shapes == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "%s: %zu input shapes but no list", source,
                     o->input_shape_count);
  for (size_t i = 0; i < o->input_shape_count; ++i) {
    const tg_input_shape *s = &o->input_shapes[i];
    if (s->name == NULL || s->name[0] == '\0')
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "%s: input shape %zu has no input name", source, i);
    if (s->rank > TG_MAX_RANK)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "%s: input shape for '%s' has rank %u, more than %d",
                       source, s->name, s->rank, TG_MAX_RANK);
    uint64_t count = 1;
    for (uint32_t d = 0; d < s->rank; ++d) {
      if (s->dims[d] < 0)
        return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "%s: input shape for '%s': dimension %u is %lld",
                         source, s->name, d, (long long)s->dims[d]);
      if (!tg__mul_u64(count, (uint64_t)s->dims[d], &count) || count > (uint64_t)INT64_MAX)
        return tg__error(err, TG_ERROR_OVERFLOW, "%s: input shape for '%s' has more elements than fit in 63 bits",
                         source, s->name);
    }
    for (size_t j = 0; j < i; ++j)
      if (strcmp(o->input_shapes[j].name, s->name) == 0)
        return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "%s: input '%s' is given two shapes", source, s->name);
  }
  return TG_OK;
}

const tg_input_shape *tg__find_input_shape(const tg_model_options *o, const char *name) {
  if (o == NULL || name == NULL) return NULL;
  for (size_t i = 0; i < o->input_shape_count; ++i)
    if (strcmp(o->input_shapes[i].name, name) == 0) return &o->input_shapes[i];
  return NULL;
}

tg_status tg__unknown_input_shapes(const char *source, const tg_model_options *o,
                                   const char *const *inputs, size_t input_count,
                                   tg_error_info *err) {
  if (o == NULL) return TG_OK;
  for (size_t i = 0; i < o->input_shape_count; ++i) {
    const char *name = o->input_shapes[i].name;
    size_t k = 0;
    while (k < input_count && strcmp(inputs[k], name) != 0) ++k;
    if (k < input_count) continue;
    char list[256];
    size_t n = 0;
    list[0] = '\0';
    for (size_t j = 0; j < input_count && n + 1 < sizeof list; ++j) {
      int w = snprintf(list + n, sizeof list - n, "%s'%s'", j ? ", " : "", inputs[j]);
      if (w < 0) break;
      n += (size_t)w < sizeof list - n ? (size_t)w : sizeof list - n - 1;
    }
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                     "%s: an input shape is given for '%s', which is not a graph input (inputs: %s)",
                     source, name, input_count ? list : "none");
  }
  return TG_OK;
}

tg_status tg__check_static_input_shapes(const tg_graph *g, const tg_model_options *o,
                                        tg_error_info *err) {
  const char *src = g->source ? g->source : "graph";
  tg_status st = tg__check_input_shapes(src, o, err);
  if (st != TG_OK || o == NULL || o->input_shape_count == 0) return st;
  for (size_t i = 0; i < o->input_shape_count; ++i) {
    const tg_input_shape *s = &o->input_shapes[i];
    const tg_tensor *t = NULL;
    for (size_t k = 0; k < g->input_count && t == NULL; ++k)
      if (strcmp(g->tensors[g->inputs[k]].name, s->name) == 0) t = &g->tensors[g->inputs[k]];
    if (t == NULL) {
      /* Name the first inputs in the message. */
      const char *names[16];
      size_t n = g->input_count < 16 ? g->input_count : 16;
      for (size_t k = 0; k < n; ++k) names[k] = g->tensors[g->inputs[k]].name;
      tg_model_options one = {s, 1};
      return tg__unknown_input_shapes(src, &one, names, n, err);
    }
    int same = t->rank == s->rank;
    for (uint32_t d = 0; same && d < s->rank; ++d) same = t->shape[d] == s->dims[d];
    if (!same) {
      char a[128], b[128];
      tg__shape_text(t->shape, t->rank, a, sizeof a);
      tg__shape_text(s->dims, s->rank, b, sizeof b);
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                       "%s: input '%s' is %s in the file, whose shapes are all static; %s was given",
                       src, s->name, a, b);
    }
  }
  return TG_OK;
}
