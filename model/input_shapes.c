/* Input shapes given to the readers (tg_model_options): checks shared by every format. */
#include <stdarg.h>
#include <stdio.h>

#include "model/model_internal.h"
#include "tangram/model.h"
#include "tangram/range.h"

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

void tg__dim_range_text(const tg_dim_range *r, char *buf, size_t size) {
  if (r->step == 1) snprintf(buf, size, "%lld..%lld", (long long)r->lo, (long long)r->hi);
  else snprintf(buf, size, "%lld..%lld/%lld", (long long)r->lo, (long long)r->hi, (long long)r->step);
}

void tg__input_shape_text(const tg_input_shape *s, char *buf, size_t size) {
  size_t n = 0;
  if (size == 0) return;
  buf[0] = '\0';
  if (s->rank == 0) {
    snprintf(buf, size, "scalar");
    return;
  }
  for (uint32_t k = 0; k < s->rank && k < TG_MAX_RANK && n + 1 < size; ++k) {
    char dim[96];
    if (s->range[k].step != 0) tg__dim_range_text(&s->range[k], dim, sizeof dim);
    else snprintf(dim, sizeof dim, "%lld", (long long)s->dims[k]);
    int w = snprintf(buf + n, size - n, "%s%s", k ? "x" : "", dim);
    if (w < 0) break;
    n += (size_t)w < size - n ? (size_t)w : size - n - 1;
  }
}

tg_status tg__check_input_shapes_with(const char *source, const tg_model_options *o, int ranges,
                                      tg_error_info *err) {
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
      const tg_dim_range *r = &s->range[d];
      if (r->step != 0) {
        char text[96];
        tg__dim_range_text(r, text, sizeof text);
        if (!ranges)
          return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                           "%s: input shape for '%s': dimension %u is a range (%s), and a model is loaded at "
                           "one size: load it over the range with tg_model_range_load",
                           source, s->name, d, text);
        const char *problem = r->step < 0 ? "STEP is negative" : r->lo < 0 ? "LO is negative"
                              : r->lo > r->hi ? "LO is above HI" : NULL;
        if (problem != NULL)
          return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "%s: input shape for '%s': dimension %u: range %s: %s",
                           source, s->name, d, text, problem);
        /* The largest size bounds the element count. */
        if (!tg__mul_u64(count, (uint64_t)r->hi, &count) || count > (uint64_t)INT64_MAX)
          return tg__error(err, TG_ERROR_OVERFLOW,
                           "%s: input shape for '%s' has more elements than fit in 63 bits at the range's end",
                           source, s->name);
        continue;
      }
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

tg_status tg__check_input_shapes(const char *source, const tg_model_options *o, tg_error_info *err) {
  return tg__check_input_shapes_with(source, o, 0, err);
}

static tg_status shape_fail(char *err, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static tg_status shape_fail(char *err, size_t size, const char *fmt, ...) {
  if (err != NULL && size > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, size, fmt, ap);
    va_end(ap);
  }
  return TG_ERROR_INVALID_ARGUMENT;
}

tg_status tg_input_shape_parse(const char *text, char *name, size_t name_size, tg_input_shape *out,
                               char *err, size_t err_size) {
  if (text == NULL || name == NULL || out == NULL)
    return shape_fail(err, err_size, "tg_input_shape_parse: text, name or out is NULL");
  const char *colon = strrchr(text, ':');
  if (colon == NULL || colon == text)
    return shape_fail(err, err_size, "must be NAME:DxDx... (e.g. x:1x3x640x640), not '%s'", text);
  size_t len = (size_t)(colon - text);
  if (len >= name_size)
    return shape_fail(err, err_size, "input name of %zu bytes is too long (at most %zu)", len,
                      name_size ? name_size - 1 : 0);
  tg_input_shape s;
  memset(&s, 0, sizeof s);
  const char *p = colon + 1;
  if (strcmp(p, "scalar") != 0) {
    for (;;) {
      const char *start = p;
      while (*p != 'x' && *p != '\0') ++p;
      size_t n = (size_t)(p - start);
      if (s.rank == TG_MAX_RANK)
        return shape_fail(err, err_size, "%s: more than %d dimensions", text, TG_MAX_RANK);
      char token[96];
      int is_range = 0;
      for (size_t k = 0; k + 1 < n; ++k) is_range |= start[k] == '.' && start[k + 1] == '.';
      if (is_range) {
        char why[256];
        if (n >= sizeof token)
          return shape_fail(err, err_size, "%s: dimension %u: a range of %zu characters is too long", text, s.rank, n);
        memcpy(token, start, n);
        token[n] = '\0';
        if (tg_dim_range_parse(token, &s.range[s.rank], why, sizeof why) != TG_OK)
          return shape_fail(err, err_size, "%s: dimension %u: %s", text, s.rank, why);
        s.dims[s.rank] = s.range[s.rank].lo;
      } else {
        uint64_t d = 0;
        const char *q = start;
        for (; q < p && *q >= '0' && *q <= '9'; ++q)
          if (!tg__mul_u64(d, 10, &d) || !tg__add_u64(d, (uint64_t)(*q - '0'), &d) || d > (uint64_t)INT64_MAX)
            return shape_fail(err, err_size, "%s: dimension %u does not fit 63 bits", text, s.rank);
        if (n == 0 || q != p)
          return shape_fail(err, err_size,
                            "%s: dimensions must be non-negative decimals separated by 'x', or ranges LO..HI or "
                            "LO..HI/STEP (e.g. %.*s:1x3x640x640, %.*s:1x3x32..960/32x32..960/32)",
                            text, (int)len, text, (int)len, text);
        s.dims[s.rank] = (int64_t)d;
      }
      ++s.rank;
      if (*p == '\0') break;
      ++p;
    }
  }
  memcpy(name, text, len);
  name[len] = '\0';
  s.name = name;
  *out = s;
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
