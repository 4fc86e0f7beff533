/* Loading a model over a range of input sizes (tg_model_range_load): the model is loaded at
 * every grid point as a plain load would (an .onnx file decoded once, read at each size), its
 * records checked to be the same records at every size, and their sizes kept per point. The
 * table is exact by construction: every size comes from the ordinary shape inference. */
#include <stdio.h>
#include <string.h>

#include "model/model_internal.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/range.h"

/* Record groups: 0 the primary set, 1 + s the tensors fallen to storage s. */
#define GROUPS (1 + TG_STORAGE_COUNT)

/* The model at one size and what is made of it. */
typedef struct one_size {
  tg_graph *graph;
  tg_lifetimes *lifetimes;
  tg_model_records *records;
  tg_in_place_pair *pairs;
  size_t pair_count;
  char text[256];               /* the size, "x:1x3x48x320" */
} one_size;

typedef struct loader {
  const char *source;
  const void *data;
  size_t length;
  tg_model_format format;
  tg__onnx_file *onnx;
  const tg_model_range_desc *desc;
  const tg_model_options *options;
  const tg_allocator *alloc;
  tg_model_range *range;
  tg_input_shape *shapes;       /* options->input_shape_count entries, ranges resolved */
  tg_model_options at;          /* points at `shapes` */
  tg_error_info *err;
} loader;

static const tg_record_set *group_set(const tg_model_records *mr, int g, const uint32_t **tensor_of) {
  if (g == 0) {
    *tensor_of = mr->tensor_of;
    return mr->records;
  }
  *tensor_of = mr->fallbacks[g - 1].tensor_of;
  return mr->fallbacks[g - 1].records;
}

static size_t group_count(const tg_model_records *mr, int g) {
  const uint32_t *t;
  const tg_record_set *s = group_set(mr, g, &t);
  return s ? s->count : 0;
}

static const char *group_name(const loader *l, int g) {
  return tg_storage_name(g == 0 ? l->desc->storage : (tg_storage)(g - 1));
}

static void one_size_free(one_size *o, const tg_allocator *a) {
  if (o->pairs) tg__free(a, o->pairs);
  tg_model_records_destroy(o->records);
  tg_lifetimes_destroy(o->lifetimes);
  tg_graph_destroy(o->graph);
  memset(o, 0, sizeof *o);
}

void tg_model_range_destroy(tg_model_range *r) {
  if (r == NULL) return;
  tg_allocator a = r->alloc;
  for (int s = 0; s < TG_STORAGE_COUNT; ++s) tg_range_records_destroy(r->fallbacks[s]);
  tg_range_records_destroy(r->primary);
  if (r->in_place) tg__free(&a, r->in_place);
  tg_model_records_destroy(r->records);
  tg_lifetimes_destroy(r->lifetimes);
  tg_model_destroy(r->model);
  tg__free(&a, r);
}

tg_status tg_model_range_shapes_at(const tg_model_range *r, const tg_model_options *options,
                                   const int64_t *dims, tg_input_shape *out) {
  uint64_t index;
  if (r == NULL || options == NULL || out == NULL || (options->input_shape_count > 0 && options->input_shapes == NULL) ||
      tg_size_range_index(&r->range, dims, &index) != TG_OK)
    return TG_ERROR_INVALID_ARGUMENT;
  for (size_t i = 0; i < options->input_shape_count; ++i) {
    tg_input_shape s = options->input_shapes[i];
    for (uint32_t d = 0; d < s.rank && d < TG_MAX_RANK; ++d) {
      if (s.range[d].step == 0) continue;
      size_t k = 0;
      while (k < r->axis_count && !(r->axes[k].option == i && r->axes[k].axis == d)) ++k;
      if (k == r->axis_count) return TG_ERROR_INVALID_ARGUMENT;
      s.dims[d] = dims[r->axes[k].dim];
      memset(&s.range[d], 0, sizeof s.range[d]);
    }
    out[i] = s;
  }
  return TG_OK;
}

/* The shapes of the ranged inputs at `dims`, "x:1x3x48x320" (several joined by ", "). */
static void size_text(const loader *l, char *buf, size_t size) {
  size_t n = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < l->options->input_shape_count && n + 1 < size; ++i) {
    int ranged = 0;
    for (size_t k = 0; k < l->range->axis_count; ++k) ranged |= l->range->axes[k].option == i;
    if (!ranged) continue;
    char shape[160];
    tg__input_shape_text(&l->shapes[i], shape, sizeof shape);
    int w = snprintf(buf + n, size - n, "%s%s:%s", n ? ", " : "", l->shapes[i].name, shape);
    if (w < 0) break;
    n += (size_t)w < size - n ? (size_t)w : size - n - 1;
  }
}

/* Put the size in front of a reader's message: "m.onnx: node 3 ..." -> "m.onnx at x:1x3x8x8:
 * node 3 ...". */
static tg_status fail_at(loader *l, const one_size *o, tg_status st, const tg_error_info *e) {
  size_t n = strlen(l->source);
  const char *msg = e->message[0] ? e->message : tg_status_string(st);
  if (strncmp(msg, l->source, n) == 0)
    return tg__error(l->err, st, "%s at %s%s", l->source, o->text, msg + n);
  return tg__error(l->err, st, "%s at %s: %s", l->source, o->text, msg);
}

/* Load the model at grid point `dims` and make its records. */
static tg_status load_at(loader *l, const int64_t *dims, one_size *o) {
  const tg_model_range_desc *d = l->desc;
  tg_status st = tg_model_range_shapes_at(l->range, l->options, dims, l->shapes);
  if (st != TG_OK) return tg__error(l->err, st, "%s: the ranges do not match the input shapes", l->source);
  size_text(l, o->text, sizeof o->text);
  tg_error_info e = {{0}};
  if (l->format == TG_MODEL_FORMAT_ONNX) st = tg__onnx_read(l->onnx, &l->at, &o->graph, &e);
  else if (l->format == TG_MODEL_FORMAT_TFLITE)
    st = tg_graph_parse_tflite_with(l->data, l->length, l->source, &l->at, l->alloc, &o->graph, &e);
  else st = tg__error(&e, TG_ERROR_INVALID_ARGUMENT, "%s: only .onnx and .tflite models have dynamic dimensions", l->source);
  tg_lifetime_options lo = {d->plan_io};
  if (st == TG_OK) st = tg_graph_compute_lifetimes(o->graph, &lo, l->alloc, &o->lifetimes, &e);
  if (st == TG_OK)
    st = (d->chain ? tg_model_records_create_chain : tg_model_records_create)(
        o->graph, o->lifetimes, d->storage, d->precision, d->limits, l->alloc, &o->records, &e);
  if (st == TG_OK)
    st = tg_model_in_place_pairs(o->graph, o->lifetimes, o->records, d->in_place_images, l->alloc, &o->pairs,
                                 &o->pair_count);
  if (st != TG_OK) {
    st = fail_at(l, o, st, &e);
    one_size_free(o, l->alloc);
  }
  return st;
}

/* Per tensor of `o`: its group (-1: no record) and record index. */
static void place_tensors(const one_size *o, int8_t *group, uint32_t *index) {
  for (size_t t = 0; t < o->graph->tensor_count; ++t) group[t] = -1;
  for (int g = 0; g < GROUPS; ++g) {
    const uint32_t *tensor_of;
    const tg_record_set *s = group_set(o->records, g, &tensor_of);
    for (size_t r = 0; s && r < s->count; ++r) {
      group[tensor_of[r]] = (int8_t)g;
      index[tensor_of[r]] = (uint32_t)r;
    }
  }
}

/* Why tensor `t` has no record in `o`. */
static const char *why_unplanned(const one_size *o, size_t t) {
  const tg_tensor *x = &o->graph->tensors[t];
  for (uint32_t d = 0; d < x->rank; ++d)
    if (x->shape[d] == 0) return "it holds no elements there";
  if (o->lifetimes->tensors[t].constant) return "it is computed before the run there";
  return "it is not planned there";
}

/* The reason tensor `t` (record `r` of group `g` of `o`) left the storage before. */
static const char *fallback_reason(const one_size *o, int g, uint32_t r) {
  if (g == 0) return "";
  const tg_model_fallback *f = &o->records->fallbacks[g - 1];
  return f->reasons && f->reasons[r] ? f->reasons[r] : "";
}

/* The graph and records at `o` are those at the reference `ref`, but for sizes. `group`,
 * `index`: the reference's placement; `g2`, `i2`: scratch. */
static tg_status compare(loader *l, const one_size *ref, const one_size *o, const int8_t *group,
                         const uint32_t *index, int8_t *g2, uint32_t *i2) {
  const tg_graph *a = ref->graph, *b = o->graph;
  const char *src = l->source;
  if (a->op_count != b->op_count || a->tensor_count != b->tensor_count)
    return tg__error(l->err, TG_ERROR_UNSUPPORTED,
                     "%s: the graph has %zu ops and %zu tensors at %s but %zu ops and %zu tensors at %s (a "
                     "branch or folded shape arithmetic depends on the size): one plan cannot cover both sizes",
                     src, a->op_count, a->tensor_count, ref->text, b->op_count, b->tensor_count, o->text);
  for (size_t k = 0; k < a->op_count; ++k) {
    const tg_op *x = &a->ops[k], *y = &b->ops[k];
    int same = strcmp(x->name, y->name) == 0 && x->input_count == y->input_count && x->output_count == y->output_count;
    for (uint32_t j = 0; same && j < x->input_count; ++j) same = x->inputs[j] == y->inputs[j];
    for (uint32_t j = 0; same && j < x->output_count; ++j) same = x->outputs[j] == y->outputs[j];
    if (!same)
      return tg__error(l->err, TG_ERROR_UNSUPPORTED,
                       "%s: op %zu is %s at %s but %s at %s, or reads or writes other tensors: one plan cannot "
                       "cover both sizes",
                       src, k, x->name, ref->text, y->name, o->text);
  }
  place_tensors(o, g2, i2);
  for (size_t t = 0; t < a->tensor_count; ++t) {
    const char *name = a->tensors[t].name;
    if (strcmp(name, b->tensors[t].name) != 0)
      return tg__error(l->err, TG_ERROR_UNSUPPORTED, "%s: tensor %zu is '%s' at %s but '%s' at %s", src, t, name,
                       ref->text, b->tensors[t].name, o->text);
    if (group[t] == g2[t] && (group[t] < 0 || index[t] == i2[t])) continue;
    if (group[t] < 0 || g2[t] < 0) {
      int at_ref = group[t] >= 0;
      return tg__error(l->err, TG_ERROR_UNSUPPORTED,
                       "%s: tensor '%s' gets a record at %s but none at %s (%s): one plan cannot cover both sizes",
                       src, name, at_ref ? ref->text : o->text, at_ref ? o->text : ref->text,
                       why_unplanned(at_ref ? o : ref, t));
    }
    if (group[t] != g2[t]) {
      const one_size *fell = g2[t] != 0 ? o : ref;
      int fg = fell == o ? g2[t] : group[t];
      uint32_t fi = fell == o ? i2[t] : index[t];
      return tg__error(l->err, TG_ERROR_UNSUPPORTED,
                       "%s: tensor '%.160s' is in %s at %s but in %s at %s (%s at %s): one plan needs each "
                       "tensor in one storage at every size; narrow the range or raise the device limits",
                       src, name, group_name(l, group[t]), ref->text, group_name(l, g2[t]), o->text,
                       fallback_reason(fell, fg, fi), fell->text);
    }
    return tg__error(l->err, TG_ERROR_UNSUPPORTED, "%s: tensor '%s' is record %u of the %s set at %s but record %u at %s",
                     src, name, index[t], group_name(l, group[t]), ref->text, i2[t], o->text);
  }
  for (int g = 0; g < GROUPS; ++g) {
    const uint32_t *ta, *tb;
    const tg_record_set *sa = group_set(ref->records, g, &ta), *sb = group_set(o->records, g, &tb);
    for (size_t r = 0; sa && r < sa->count; ++r) {
      const tg_usage_record *x = &sa->records[r], *y = &sb->records[r];
      if (x->first_task != y->first_task || x->last_task != y->last_task)
        return tg__error(l->err, TG_ERROR_UNSUPPORTED,
                         "%s: tensor '%s' lives over ops %u..%u at %s but %u..%u at %s: one plan cannot cover both sizes",
                         src, a->tensors[ta[r]].name, x->first_task, x->last_task, ref->text, y->first_task,
                         y->last_task, o->text);
    }
  }
  return TG_OK;
}

/* Keep the reference's pairs that `o` has too (both lists ascend by op, one pair per op). */
static void keep_common_pairs(const one_size *ref, const one_size *o, uint8_t *keep) {
  size_t j = 0;
  for (size_t k = 0; k < ref->pair_count; ++k) {
    const tg_in_place_pair *p = &ref->pairs[k];
    while (j < o->pair_count && o->pairs[j].op < p->op) ++j;
    if (j == o->pair_count || o->pairs[j].op != p->op || o->pairs[j].input != p->input ||
        o->pairs[j].output != p->output || (o->pairs[j].view != 0) != (p->view != 0))
      keep[k] = 0;
  }
}

/* Which input dimensions vary, checked against the file's inputs; fills range->range and
 * range->axes. */
static tg_status find_axes(loader *l) {
  tg_model_range *r = l->range;
  const tg_model_options *o = l->options;
  const char *src = l->source;
  tg_error_info e = {{0}};
  tg_model_inputs *in = NULL;
  tg_status st = tg_model_parse_inputs(l->data, l->length, src, l->alloc, &in, &e);
  if (st != TG_OK) return tg__error(l->err, st, "%s", e.message);
  const char *names[16]; /* the first inputs, named in a message */
  size_t nn = in->count < 16 ? in->count : 16;
  for (size_t k = 0; k < nn; ++k) names[k] = in->inputs[k].name;
  for (size_t i = 0; st == TG_OK && i < o->input_shape_count; ++i) {
    const tg_input_shape *s = &o->input_shapes[i];
    size_t k = 0;
    while (k < in->count && strcmp(in->inputs[k].name, s->name) != 0) ++k;
    if (k == in->count) {
      tg_model_options one = {s, 1};
      st = tg__unknown_input_shapes(src, &one, names, nn, l->err);
    }
  }
  char list[160] = "";
  size_t ranged = 0;
  const char *dim_name[TG_RANGE_MAX_DIMS + 1] = {NULL};
  for (size_t k = 0; st == TG_OK && k < in->count; ++k) {
    const tg_model_input *mi = &in->inputs[k];
    size_t i = 0;
    while (i < o->input_shape_count && strcmp(o->input_shapes[i].name, mi->name) != 0) ++i;
    if (i == o->input_shape_count) continue;
    const tg_input_shape *s = &o->input_shapes[i];
    for (uint32_t d = 0; st == TG_OK && d < s->rank; ++d) {
      const tg_dim_range *dr = &s->range[d];
      if (dr->step == 0) continue;
      char text[160], file[160];
      tg__input_shape_text(s, text, sizeof text);
      if (!mi->has_shape || s->rank != mi->rank) {
        st = tg__error(l->err, TG_ERROR_INVALID_ARGUMENT, "%s: input '%s' has rank %u in the file but the shape given, %s, has rank %u",
                       src, mi->name, mi->has_shape ? mi->rank : 0, text, s->rank);
        break;
      }
      if (!((mi->dynamic >> d) & 1u)) {
        tg__shape_text(mi->dims, mi->rank, file, sizeof file);
        tg__dim_range_text(dr, text, sizeof text);
        st = tg__error(l->err, TG_ERROR_INVALID_ARGUMENT,
                       "%s: input '%s': dimension %u is static (%lld in the file, %s): a range (%s) is only for a "
                       "dynamic dimension",
                       src, mi->name, d, (long long)mi->dims[d], file, text);
        break;
      }
      /* A dimension named like an earlier one, with the same range, is that dimension. */
      const char *dn = mi->dim_names[d];
      uint32_t dim = r->range.count;
      for (uint32_t j = 0; dn != NULL && j < r->range.count && j < TG_RANGE_MAX_DIMS; ++j)
        if (dim_name[j] != NULL && strcmp(dim_name[j], dn) == 0 && r->range.dim[j].lo == dr->lo &&
            r->range.dim[j].hi == dr->hi && r->range.dim[j].step == dr->step)
          dim = j;
      size_t n = strlen(list);
      if (dim == r->range.count) {
        if (n + 1 < sizeof list) snprintf(list + n, sizeof list - n, "%s%s[%u]", n ? ", " : "", mi->name, d);
        if (r->range.count < TG_RANGE_MAX_DIMS) {
          r->range.dim[r->range.count] = *dr;
          dim_name[r->range.count] = dn;
        }
        ++ranged;
        r->range.count = ranged < TG_RANGE_MAX_DIMS ? (uint32_t)ranged : TG_RANGE_MAX_DIMS;
        if (ranged > TG_RANGE_MAX_DIMS) continue;
      }
      if (r->axis_count == TG_MODEL_RANGE_MAX_AXES) {
        st = tg__error(l->err, TG_ERROR_INVALID_ARGUMENT, "%s: more than %u input dimensions follow the ranges", src,
                       TG_MODEL_RANGE_MAX_AXES);
        break;
      }
      r->axes[r->axis_count++] = (tg_model_range_axis){(uint32_t)k, d, dim, (uint32_t)i};
    }
  }
  tg_model_inputs_destroy(in);
  if (st != TG_OK) return st;
  if (ranged == 0)
    return tg__error(l->err, TG_ERROR_INVALID_ARGUMENT,
                     "%s: no dimension is given as a range (LO..HI or LO..HI/STEP): load one size with "
                     "tg_model_load_with", src);
  if (ranged > TG_RANGE_MAX_DIMS)
    return tg__error(l->err, TG_ERROR_INVALID_ARGUMENT,
                     "%s: ranges on %zu dimensions (%s): at most %u may vary; give the others one size", src, ranged,
                     list, TG_RANGE_MAX_DIMS);
  r->point_count = tg_size_range_point_count(&r->range);
  if (r->point_count == 0 || r->point_count > TG_MODEL_RANGE_MAX_POINTS)
    return tg__error(l->err, TG_ERROR_INVALID_ARGUMENT,
                     "%s: the ranges (%s) make %llu sizes, more than the %u a model is loaded at: give a larger STEP",
                     src, list, (unsigned long long)r->point_count, TG_MODEL_RANGE_MAX_POINTS);
  return TG_OK;
}

/* The sizes of every record at every point; the reference (point 0) kept in `range`. */
static tg_status load_all(loader *l) {
  tg_model_range *r = l->range;
  const tg_allocator *a = l->alloc;
  one_size ref, o;
  memset(&ref, 0, sizeof ref);
  memset(&o, 0, sizeof o);
  int64_t dims[TG_RANGE_MAX_DIMS] = {0};
  tg_status st = tg_size_range_point(&r->range, 0, dims);
  if (st == TG_OK) st = load_at(l, dims, &ref);
  if (st != TG_OK) return st;
  memcpy(r->at, dims, sizeof r->at);
  size_t tensors = ref.graph->tensor_count ? ref.graph->tensor_count : 1;
  int8_t *group = tg__calloc(a, tensors, 2);
  uint32_t *index = tg__calloc(a, tensors, 2 * sizeof *index);
  uint8_t *keep = tg__calloc(a, ref.pair_count ? ref.pair_count : 1, 1);
  tg_extent *table[GROUPS] = {NULL};
  size_t count[GROUPS];
  if (group == NULL || index == NULL || keep == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
  for (int g = 0; st == TG_OK && g < GROUPS; ++g) {
    count[g] = group_count(ref.records, g);
    size_t cells;
    if (count[g] == 0) continue;
    if (!tg__mul_size((size_t)r->point_count, count[g], &cells)) st = TG_ERROR_OVERFLOW;
    else if ((table[g] = tg__calloc(a, cells, sizeof *table[g])) == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (st != TG_OK) tg__error(l->err, st, "%s: %s keeping the sizes of %llu points", l->source, tg_status_string(st),
                             (unsigned long long)r->point_count);
  if (st == TG_OK) {
    place_tensors(&ref, group, index);
    memset(keep, 1, ref.pair_count);
  }
  for (uint64_t p = 0; st == TG_OK && p < r->point_count; ++p) {
    const one_size *at = &ref;
    if (p > 0) {
      st = tg_size_range_point(&r->range, p, dims);
      if (st == TG_OK) st = load_at(l, dims, &o);
      if (st == TG_OK) st = compare(l, &ref, &o, group, index, group + tensors, index + tensors);
      if (st != TG_OK) break;
      keep_common_pairs(&ref, &o, keep);
      at = &o;
    }
    for (int g = 0; g < GROUPS; ++g) {
      const uint32_t *t;
      const tg_record_set *s = group_set(at->records, g, &t);
      for (size_t i = 0; i < count[g]; ++i) table[g][(size_t)p * count[g] + i] = s->records[i].size;
    }
    one_size_free(&o, a);
  }
  one_size_free(&o, a);
  /* The tables become range records; tasks from the reference. */
  uint32_t *first = NULL, *last = NULL;
  uint64_t *align = NULL;
  size_t most = 1;
  for (int g = 0; g < GROUPS; ++g)
    if (st == TG_OK && table[g] != NULL && count[g] > most) most = count[g];
  if (st == TG_OK) {
    first = tg__calloc(a, most, sizeof *first);
    last = tg__calloc(a, most, sizeof *last);
    align = tg__calloc(a, most, sizeof *align);
    if (first == NULL || last == NULL || align == NULL) st = tg__error(l->err, TG_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", l->source);
  }
  for (int g = 0; st == TG_OK && g < GROUPS; ++g) {
    const uint32_t *t;
    const tg_record_set *s = group_set(ref.records, g, &t);
    if (s == NULL || (g > 0 && count[g] == 0)) continue;
    for (size_t i = 0; i < count[g]; ++i) {
      first[i] = s->records[i].first_task;
      last[i] = s->records[i].last_task;
      align[i] = s->records[i].alignment;
    }
    tg_range_records_desc rd = {r->range, s->dims, count[g], first, last, table[g], align};
    st = tg_range_records_create(&rd, a, g == 0 ? &r->primary : &r->fallbacks[g - 1]);
    if (st != TG_OK) tg__error(l->err, st, "%s: the records over the range: %s", l->source, tg_status_string(st));
  }
  /* The pairs that hold at every size. */
  if (st == TG_OK && ref.pair_count > 0) {
    size_t n = 0;
    for (size_t k = 0; k < ref.pair_count; ++k)
      if (keep[k]) ref.pairs[n++] = ref.pairs[k];
    ref.pair_count = n;
  }
  if (st == TG_OK) {
    r->model = tg__calloc(a, 1, sizeof *r->model);
    if (r->model == NULL) st = tg__error(l->err, TG_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", l->source);
  }
  if (st == TG_OK) {
    r->model->kind = TG_MODEL_GRAPH;
    r->model->format = l->format;
    r->model->graph = ref.graph;
    r->model->alloc = *a;
    r->lifetimes = ref.lifetimes;
    r->records = ref.records;
    r->in_place = ref.pair_count ? ref.pairs : NULL;
    r->in_place_count = ref.pair_count;
    if (ref.pair_count == 0 && ref.pairs) tg__free(a, ref.pairs);
    memset(&ref, 0, sizeof ref);
    /* Each tensor's graph input index, for the axes. */
    for (size_t k = 0; k < r->axis_count; ++k) {
      const char *name = l->options->input_shapes[r->axes[k].option].name;
      for (size_t j = 0; j < r->model->graph->input_count; ++j)
        if (strcmp(r->model->graph->tensors[r->model->graph->inputs[j]].name, name) == 0) r->axes[k].input = (uint32_t)j;
    }
  }
  one_size_free(&ref, a);
  for (int g = 0; g < GROUPS; ++g) tg__free(a, table[g]);
  tg__free(a, first);
  tg__free(a, last);
  tg__free(a, align);
  tg__free(a, group);
  tg__free(a, index);
  tg__free(a, keep);
  return st;
}

tg_status tg_model_range_parse(const void *data, size_t length, const char *source,
                               const tg_model_range_desc *desc, const tg_allocator *alloc,
                               tg_model_range **out, tg_error_info *err) {
  if (out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "tg_model_range_parse: out is NULL");
  *out = NULL;
  if ((data == NULL && length > 0) || desc == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "tg_model_range_parse: data or desc is NULL");
  if ((unsigned)desc->storage >= TG_STORAGE_COUNT || (unsigned)desc->precision >= TG_PRECISION_COUNT)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "tg_model_range_parse: storage or precision out of range");
  alloc = tg__alloc_or_default(alloc);
  loader l = {
      .source = source ? source : "<memory>", .data = data, .length = length, .desc = desc,
      .options = desc->options, .alloc = alloc, .err = err, .format = tg_model_detect_format(data, length)
  };
  tg_model_options none = {NULL, 0};
  if (l.options == NULL) l.options = &none;
  tg_status st = tg__check_input_shapes_with(l.source, l.options, 1, err);
  if (st != TG_OK) return st;
  if (l.format == TG_MODEL_FORMAT_RECORDS_CSV)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "%s: holds usage records, which have no inputs to give ranges to",
                     l.source);
  l.range = tg__calloc(alloc, 1, sizeof *l.range);
  l.shapes = tg__calloc(alloc, l.options->input_shape_count ? l.options->input_shape_count : 1, sizeof *l.shapes);
  if (l.range == NULL || l.shapes == NULL) {
    tg__free(alloc, l.range);
    tg__free(alloc, l.shapes);
    return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", l.source);
  }
  l.range->alloc = *alloc;
  l.at.input_shapes = l.shapes;
  l.at.input_shape_count = l.options->input_shape_count;
  st = find_axes(&l);
  if (st == TG_OK && l.format == TG_MODEL_FORMAT_ONNX) st = tg__onnx_open(data, length, l.source, alloc, &l.onnx, err);
  if (st == TG_OK) st = load_all(&l);
  tg__onnx_close(l.onnx);
  tg__free(alloc, l.shapes);
  if (st != TG_OK) {
    tg_model_range_destroy(l.range);
    return st;
  }
  *out = l.range;
  return TG_OK;
}

static tg_status parse_range(const char *data, size_t length, const char *path, const void *desc,
                             const tg_allocator *alloc, void *out, tg_error_info *err) {
  return tg_model_range_parse(data, length, path, desc, alloc, out, err);
}

tg_status tg_model_range_load(const char *path, const tg_model_range_desc *desc, const tg_allocator *alloc,
                              tg_model_range **out, tg_error_info *err) {
  if (out != NULL) *out = NULL;
  return tg__parse_file(path, "tg_model_range_load", parse_range, desc, alloc, out, err);
}
