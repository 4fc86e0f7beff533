/* Storage layouts: shape -> BHWC -> buffer bytes or texture extent, device limits, and the
 * usage records of a graph for one storage type. */
#include <stdio.h>
#include <string.h>

#include "model/model_internal.h"
#include "tangram/layout.h"

static const char *const k_storage_names[TG_STORAGE_COUNT] = {
    "buffer", "image_buffer", "texture_2d", "texture_array", "texture_3d", "single_texture_2d"};

const char *tg_storage_name(tg_storage storage) {
  if ((unsigned)storage >= TG_STORAGE_COUNT) return NULL;
  return k_storage_names[storage];
}

tg_status tg_storage_from_name(const char *name, tg_storage *out) {
  if (name == NULL || out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < TG_STORAGE_COUNT; ++i)
    if (strcmp(name, k_storage_names[i]) == 0) {
      *out = (tg_storage)i;
      return TG_OK;
    }
  return TG_ERROR_INVALID_ARGUMENT;
}

uint32_t tg_storage_dims(tg_storage storage) {
  switch (storage) {
    case TG_STORAGE_BUFFER:
    case TG_STORAGE_IMAGE_BUFFER: return 1;
    case TG_STORAGE_TEXTURE_2D:
    case TG_STORAGE_SINGLE_TEXTURE_2D: return 2;
    case TG_STORAGE_TEXTURE_ARRAY:
    case TG_STORAGE_TEXTURE_3D: return 3;
    default: return 0;
  }
}

int tg_storage_is_texture(tg_storage storage) { return tg_storage_dims(storage) > 1; }

const char *tg_precision_name(tg_precision precision) {
  switch (precision) {
    case TG_PRECISION_FP32: return "fp32";
    case TG_PRECISION_FP16: return "fp16";
    default: return NULL;
  }
}

tg_status tg_precision_from_name(const char *name, tg_precision *out) {
  if (name == NULL || out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  if (strcmp(name, "fp32") == 0) *out = TG_PRECISION_FP32;
  else if (strcmp(name, "fp16") == 0) *out = TG_PRECISION_FP16;
  else return TG_ERROR_INVALID_ARGUMENT;
  return TG_OK;
}

uint32_t tg_precision_element_bytes(tg_precision precision) {
  switch (precision) {
    case TG_PRECISION_FP32: return 4;
    case TG_PRECISION_FP16: return 2;
    default: return 0;
  }
}

uint32_t tg_precision_texel_bytes(tg_precision precision) {
  return 4 * tg_precision_element_bytes(precision);
}

tg_status tg_shape_to_bhwc(const int64_t *shape, uint32_t rank, tg_bhwc *out) {
  if (out == NULL || rank > TG_MAX_RANK || (rank > 0 && shape == NULL))
    return TG_ERROR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < rank; ++i)
    if (shape[i] < 0) return TG_ERROR_INVALID_ARGUMENT;
  tg_bhwc r = {1, 1, 1, 1};
  switch (rank) {
    case 0: break;
    case 1: r.c = (uint64_t)shape[0]; break;
    case 2: r.b = (uint64_t)shape[0]; r.c = (uint64_t)shape[1]; break;
    case 3:
      r.b = (uint64_t)shape[0];
      r.w = (uint64_t)shape[1];
      r.c = (uint64_t)shape[2];
      break;
    default: {
      uint64_t b = 1;
      for (uint32_t i = 0; i + 3 < rank; ++i)
        if (!tg__mul_u64(b, (uint64_t)shape[i], &b)) return TG_ERROR_OVERFLOW;
      r.b = b;
      r.h = (uint64_t)shape[rank - 3];
      r.w = (uint64_t)shape[rank - 2];
      r.c = (uint64_t)shape[rank - 1];
      break;
    }
  }
  *out = r;
  return TG_OK;
}

tg_status tg_shape_to_bhwc_ordered(const int64_t *shape, uint32_t rank, tg_dim_order order,
                                   tg_bhwc *out) {
  if (order == TG_DIM_ORDER_NHWC) return tg_shape_to_bhwc(shape, rank, out);
  if (order != TG_DIM_ORDER_NCHW || rank > TG_MAX_RANK || (rank > 0 && shape == NULL))
    return TG_ERROR_INVALID_ARGUMENT;
  if (rank < 3) return tg_shape_to_bhwc(shape, rank, out);
  /* [N, C, s1, ..., sk] -> [N, s1, ..., sk, C] */
  int64_t nhwc[TG_MAX_RANK];
  nhwc[0] = shape[0];
  for (uint32_t i = 2; i < rank; ++i) nhwc[i - 1] = shape[i];
  nhwc[rank - 1] = shape[1];
  return tg_shape_to_bhwc(nhwc, rank, out);
}

tg_status tg_storage_extent(tg_bhwc s, tg_storage storage, tg_precision precision,
                            tg_extent *out) {
  uint32_t elem = tg_precision_element_bytes(precision);
  if (out == NULL || elem == 0 || tg_storage_dims(storage) == 0)
    return TG_ERROR_INVALID_ARGUMENT;
  uint64_t slices = s.c / 4 + (s.c % 4 != 0);
  uint64_t wb, v;
  tg_extent e = {1, 1, 1};
  if (!tg__mul_u64(s.w, s.b, &wb)) return TG_ERROR_OVERFLOW;
  switch (storage) {
    case TG_STORAGE_BUFFER:
    case TG_STORAGE_IMAGE_BUFFER:
      if (!tg__mul_u64(wb, s.h, &v) || !tg__mul_u64(v, slices, &v) ||
          !tg__mul_u64(v, 4u * elem, &v))
        return TG_ERROR_OVERFLOW;
      e.w = v;
      break;
    case TG_STORAGE_TEXTURE_2D:
      if (!tg__mul_u64(s.h, slices, &v)) return TG_ERROR_OVERFLOW;
      e.w = wb;
      e.h = v;
      break;
    case TG_STORAGE_TEXTURE_ARRAY:
    case TG_STORAGE_TEXTURE_3D:
      e.w = wb;
      e.h = s.h;
      e.d = slices;
      break;
    case TG_STORAGE_SINGLE_TEXTURE_2D:
      if (s.c > 4) return TG_ERROR_UNSUPPORTED;
      e.w = wb;
      e.h = s.h;
      break;
    default: return TG_ERROR_INVALID_ARGUMENT;
  }
  /* Volumes feed the planner's sums: keep every record's volume representable. */
  if (tg_extent_volume(e, &v) != TG_OK) return TG_ERROR_OVERFLOW;
  *out = e;
  return TG_OK;
}

tg_device_limits tg_device_limits_default(void) {
  tg_device_limits l;
  l.max_buffer_bytes = (uint64_t)1 << 27;
  l.max_image_buffer_texels = 65536;
  l.max_texture_2d_width = 8192;
  l.max_texture_2d_height = 8192;
  l.max_texture_3d_width = 2048;
  l.max_texture_3d_height = 2048;
  l.max_texture_3d_depth = 2048;
  l.max_texture_array_layers = 2048;
  return l;
}

/* `v` exceeds limit `max` (0 = unlimited)? */
static int over(uint64_t v, uint64_t max) { return max != 0 && v > max; }

static void set_reason(char *reason, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void set_reason(char *reason, size_t size, const char *fmt, ...) {
  if (reason == NULL || size == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, size, fmt, ap);
  va_end(ap);
}

tg_status tg_storage_check_fit(tg_bhwc shape, tg_storage storage, tg_precision precision,
                               const tg_device_limits *limits, tg_extent *extent, char *reason,
                               size_t reason_size) {
  if (reason && reason_size) reason[0] = '\0';
  tg_extent e;
  tg_status st = tg_storage_extent(shape, storage, precision, &e);
  if (st == TG_ERROR_UNSUPPORTED) {
    set_reason(reason, reason_size, "C=%llu > 4 for single_texture_2d",
               (unsigned long long)shape.c);
    return st;
  }
  if (st == TG_ERROR_OVERFLOW) {
    set_reason(reason, reason_size, "size of %llux%llux%llux%llu overflows 64 bits",
               (unsigned long long)shape.b, (unsigned long long)shape.h,
               (unsigned long long)shape.w, (unsigned long long)shape.c);
    return st;
  }
  if (st != TG_OK) return st;
  if (extent) *extent = e;
  if (limits == NULL) return TG_OK;
  const unsigned long long w = e.w, h = e.h, d = e.d;
  switch (storage) {
    case TG_STORAGE_BUFFER:
      if (over(e.w, limits->max_buffer_bytes)) {
        set_reason(reason, reason_size, "%llu bytes exceed max buffer %llu bytes", w,
                   (unsigned long long)limits->max_buffer_bytes);
        return TG_ERROR_LIMIT;
      }
      break;
    case TG_STORAGE_IMAGE_BUFFER: {
      uint64_t texels = e.w / tg_precision_texel_bytes(precision);
      if (over(texels, limits->max_image_buffer_texels)) {
        set_reason(reason, reason_size, "%llu texels exceed max image buffer %llu texels",
                   (unsigned long long)texels,
                   (unsigned long long)limits->max_image_buffer_texels);
        return TG_ERROR_LIMIT;
      }
      if (over(e.w, limits->max_buffer_bytes)) {
        set_reason(reason, reason_size, "%llu bytes exceed max buffer %llu bytes", w,
                   (unsigned long long)limits->max_buffer_bytes);
        return TG_ERROR_LIMIT;
      }
      break;
    }
    case TG_STORAGE_TEXTURE_2D:
    case TG_STORAGE_SINGLE_TEXTURE_2D:
      if (over(e.w, limits->max_texture_2d_width) || over(e.h, limits->max_texture_2d_height)) {
        set_reason(reason, reason_size, "extent %llux%llu exceeds max 2D %llux%llu", w, h,
                   (unsigned long long)limits->max_texture_2d_width,
                   (unsigned long long)limits->max_texture_2d_height);
        return TG_ERROR_LIMIT;
      }
      break;
    case TG_STORAGE_TEXTURE_ARRAY:
      if (over(e.w, limits->max_texture_2d_width) || over(e.h, limits->max_texture_2d_height) ||
          over(e.d, limits->max_texture_array_layers)) {
        set_reason(reason, reason_size,
                   "extent %llux%llu with %llu layers exceeds max 2D %llux%llu with %llu layers",
                   w, h, d, (unsigned long long)limits->max_texture_2d_width,
                   (unsigned long long)limits->max_texture_2d_height,
                   (unsigned long long)limits->max_texture_array_layers);
        return TG_ERROR_LIMIT;
      }
      break;
    case TG_STORAGE_TEXTURE_3D:
      if (over(e.w, limits->max_texture_3d_width) || over(e.h, limits->max_texture_3d_height) ||
          over(e.d, limits->max_texture_3d_depth)) {
        set_reason(reason, reason_size, "extent %llux%llux%llu exceeds max 3D %llux%llux%llu", w,
                   h, d, (unsigned long long)limits->max_texture_3d_width,
                   (unsigned long long)limits->max_texture_3d_height,
                   (unsigned long long)limits->max_texture_3d_depth);
        return TG_ERROR_LIMIT;
      }
      break;
    default: return TG_ERROR_INVALID_ARGUMENT;
  }
  return TG_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Records of a graph. */

tg_storage tg_storage_fallback_next(tg_storage storage) {
  switch (storage) {
    case TG_STORAGE_TEXTURE_ARRAY:
    case TG_STORAGE_TEXTURE_3D: return TG_STORAGE_TEXTURE_2D;
    case TG_STORAGE_TEXTURE_2D:
    case TG_STORAGE_SINGLE_TEXTURE_2D: return TG_STORAGE_IMAGE_BUFFER;
    case TG_STORAGE_IMAGE_BUFFER: return TG_STORAGE_BUFFER;
    default: return TG_STORAGE_COUNT;
  }
}

tg_storage tg_storage_fallback_at(uint32_t g) {
  /* The chain below the deepest texture: texture_3d falls to every other storage in turn. */
  tg_storage s = tg_storage_fallback_next(TG_STORAGE_TEXTURE_3D);
  for (; g > 0 && s != TG_STORAGE_COUNT; --g) s = tg_storage_fallback_next(s);
  return s;
}

size_t tg_model_records_fallback_count(const tg_model_records *m) {
  size_t n = 0;
  for (int s = 0; m && s < TG_STORAGE_COUNT; ++s)
    if (m->fallbacks[s].records) n += m->fallbacks[s].records->count;
  return n;
}

static void fallback_group_free(tg_allocator *a, tg_model_fallback *f) {
  if (f->reasons && f->records)
    for (size_t i = 0; i < f->records->count; ++i) tg__free(a, f->reasons[i]);
  tg__free(a, f->reasons);
  tg__free(a, f->tensor_of);
  tg_record_set_destroy(f->records);
}

void tg_model_records_destroy(tg_model_records *m) {
  if (m == NULL) return;
  tg_allocator a = m->alloc;
  for (int s = 0; s < TG_STORAGE_COUNT; ++s)
    if (s != TG_STORAGE_BUFFER) fallback_group_free(&a, &m->fallbacks[s]);
  tg_model_fallback buf = {m->fallback, m->fallback_tensor_of, m->fallback_reasons};
  fallback_group_free(&a, &buf);
  tg__free(&a, m->tensor_of);
  tg_record_set_destroy(m->records);
  tg__free(&a, m);
}

/* Visit planned tensors in record order: graph inputs first (only planned with plan_io),
 * then each op's outputs in op order. Tensors are visited once. Returns the count. */
static size_t order_planned(const tg_graph *g, const tg_lifetimes *l, uint32_t *order,
                            unsigned char *seen) {
  size_t n = 0;
  for (size_t k = 0; k < g->input_count; ++k) {
    uint32_t t = g->inputs[k];
    if (t < l->tensor_count && l->tensors[t].planned && !seen[t]) {
      seen[t] = 1;
      order[n++] = t;
    }
  }
  for (size_t i = 0; i < g->op_count; ++i)
    for (uint32_t k = 0; k < g->ops[i].output_count; ++k) {
      int32_t t = g->ops[i].outputs[k];
      if (t >= 0 && (size_t)t < l->tensor_count && l->tensors[t].planned && !seen[t]) {
        seen[t] = 1;
        order[n++] = (uint32_t)t;
      }
    }
  /* Planned tensors that no op writes and that are not graph inputs can only come from
   * lifetimes built by hand; keep them rather than drop them silently. */
  for (size_t t = 0; t < l->tensor_count; ++t)
    if (l->tensors[t].planned && !seen[t]) {
      seen[t] = 1;
      order[n++] = (uint32_t)t;
    }
  return n;
}

/* Where a tensor of BHWC `s` that does not fit `storage` goes: the first storage of the chain
 * (chain) or a buffer (not) that fits, its size in `*size`. The reason it left each storage it
 * passed, joined with "; as S: ", goes to `reason`. Returns TG_OK, or the status of the last
 * try (the buffer's) when none fits; `*to` is then TG_STORAGE_COUNT. */
static tg_status fall_back(tg_bhwc s, tg_storage storage, tg_precision precision,
                           const tg_device_limits *limits, int chain, tg_storage *to, tg_extent *size,
                           char *reason, size_t reason_size) {
  *to = TG_STORAGE_COUNT;
  tg_status st = tg_storage_check_fit(s, storage, precision, limits, size, reason, reason_size);
  if (st == TG_OK || st == TG_ERROR_OVERFLOW || storage == TG_STORAGE_BUFFER) return st;
  tg_storage next = chain ? tg_storage_fallback_next(storage) : TG_STORAGE_BUFFER;
  while (next != TG_STORAGE_COUNT) {
    char why[160];
    st = tg_storage_check_fit(s, next, precision, limits, size, why, sizeof why);
    if (st == TG_OK) {
      *to = next;
      return TG_OK;
    }
    if (st == TG_ERROR_OVERFLOW || next == TG_STORAGE_BUFFER) {
      size_t used = strlen(reason);
      if (used < reason_size) snprintf(reason + used, reason_size - used, ", and as a buffer %s", why);
      return st;
    }
    size_t used = strlen(reason);
    if (used < reason_size) snprintf(reason + used, reason_size - used, "; as %s: %s", tg_storage_name(next), why);
    next = tg_storage_fallback_next(next);
  }
  return TG_ERROR_LIMIT;
}

static tg_status records_create(const tg_graph *g, const tg_lifetimes *l, tg_storage storage,
                                tg_precision precision, const tg_device_limits *limits, int chain,
                                const tg_allocator *alloc, tg_model_records **out, tg_error_info *err) {
  if (out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = NULL;
  if (g == NULL || l == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "graph or lifetimes is NULL");
  if (l->tensor_count != g->tensor_count)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                     "lifetimes are for %zu tensors but the graph has %zu", l->tensor_count,
                     g->tensor_count);
  if (tg_storage_dims(storage) == 0 || tg_precision_element_bytes(precision) == 0)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "unknown storage or precision");
  alloc = tg__alloc_or_default(alloc);
  const char *src = g->source ? g->source : "graph";
  const size_t nt = g->tensor_count ? g->tensor_count : 1;

  tg_status st = TG_OK;
  tg_model_records *m = tg__calloc(alloc, 1, sizeof *m);
  if (m != NULL) m->alloc = *alloc;  /* before anything can fail: destroy needs it */
  uint32_t *order = tg__calloc(alloc, nt, sizeof *order);
  unsigned char *seen = tg__calloc(alloc, nt, 1);
  unsigned char *falls = tg__calloc(alloc, nt, 1);  /* 0: primary; else 1 + the storage fallen to */
  tg_extent *size = tg__calloc(alloc, nt, sizeof *size);  /* indexed by position in order */
  if (m == NULL || order == NULL || seen == NULL || falls == NULL || size == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  m->storage = storage;
  m->precision = precision;
  size_t n = order_planned(g, l, order, seen);

  /* Sizes first, so the sets can be allocated at their final counts. */
  size_t primary = 0, count[TG_STORAGE_COUNT] = {0};
  for (size_t k = 0; k < n; ++k) {
    const tg_tensor *t = &g->tensors[order[k]];
    const tg_tensor_lifetime *tl = &l->tensors[order[k]];
    char reason[480];
    tg_bhwc s;
    if (tl->first_task < 0 || tl->last_task < tl->first_task) {
      st = tg__error(err, TG_ERROR_INVALID_ARGUMENT, "%s: tensor '%s' is planned with interval [%d, %d]",
                     src, t->name ? t->name : "?", (int)tl->first_task, (int)tl->last_task);
      goto done;
    }
    st = tg_shape_to_bhwc_ordered(t->shape, t->rank, g->dim_order, &s);
    if (st != TG_OK) {
      st = tg__error(err, st == TG_ERROR_OVERFLOW ? TG_ERROR_OVERFLOW : TG_ERROR_INVALID_ARGUMENT,
                     "%s: tensor '%s': invalid or too large shape", src, t->name ? t->name : "?");
      goto done;
    }
    tg_storage to;
    st = fall_back(s, storage, precision, limits, chain, &to, &size[k], reason, sizeof reason);
    if (st != TG_OK) {
      st = tg__error(err, st, "%s: tensor '%s': %s", src, t->name ? t->name : "?", reason);
      goto done;
    }
    if (to == TG_STORAGE_COUNT) {
      ++primary;
      continue;
    }
    falls[order[k]] = (unsigned char)(1 + to);
    ++count[to];
  }

  if ((st = tg_record_set_create(tg_storage_dims(storage), primary, alloc, &m->records)) != TG_OK ||
      (st = tg_record_set_create(1, count[TG_STORAGE_BUFFER], alloc, &m->fallback)) != TG_OK)
    goto done;
  m->tensor_of = tg__calloc(alloc, primary ? primary : 1, sizeof *m->tensor_of);
  m->fallback_tensor_of = tg__calloc(alloc, count[TG_STORAGE_BUFFER] ? count[TG_STORAGE_BUFFER] : 1,
                                     sizeof *m->fallback_tensor_of);
  m->fallback_reasons = tg__calloc(alloc, count[TG_STORAGE_BUFFER] ? count[TG_STORAGE_BUFFER] : 1,
                                   sizeof *m->fallback_reasons);
  if (m->tensor_of == NULL || m->fallback_tensor_of == NULL || m->fallback_reasons == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  m->fallbacks[TG_STORAGE_BUFFER].records = m->fallback;
  m->fallbacks[TG_STORAGE_BUFFER].tensor_of = m->fallback_tensor_of;
  m->fallbacks[TG_STORAGE_BUFFER].reasons = m->fallback_reasons;
  for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
    tg_model_fallback *f = &m->fallbacks[s];
    if (s == TG_STORAGE_BUFFER || count[s] == 0) continue;
    if ((st = tg_record_set_create(tg_storage_dims((tg_storage)s), count[s], alloc, &f->records)) != TG_OK)
      goto done;
    f->tensor_of = tg__calloc(alloc, count[s], sizeof *f->tensor_of);
    f->reasons = tg__calloc(alloc, count[s], sizeof *f->reasons);
    if (f->tensor_of == NULL || f->reasons == NULL) {
      st = TG_ERROR_OUT_OF_HOST_MEMORY;
      goto done;
    }
  }
  size_t ip = 0, next[TG_STORAGE_COUNT] = {0};
  for (size_t k = 0; k < n; ++k) {
    uint32_t t = order[k];
    const tg_tensor_lifetime *tl = &l->tensors[t];
    tg_record_set *set;
    size_t r;
    if (falls[t]) {
      char reason[480];
      tg_bhwc s;
      tg_storage to;
      tg_extent ignored;
      tg_model_fallback *f = &m->fallbacks[falls[t] - 1];
      /* Recompute the reason rather than keep n strings around during sizing. */
      (void)tg_shape_to_bhwc_ordered(g->tensors[t].shape, g->tensors[t].rank, g->dim_order, &s);
      (void)fall_back(s, storage, precision, limits, chain, &to, &ignored, reason, sizeof reason);
      r = next[falls[t] - 1]++;
      f->reasons[r] = tg__strdup(alloc, reason);
      if (f->reasons[r] == NULL) {
        st = TG_ERROR_OUT_OF_HOST_MEMORY;
        goto done;
      }
      f->tensor_of[r] = t;
      set = f->records;
    } else {
      m->tensor_of[ip] = t;
      set = m->records;
      r = ip++;
    }
    set->records[r].size = size[k];
    set->records[r].first_task = (uint32_t)tl->first_task;
    set->records[r].last_task = (uint32_t)tl->last_task;
    set->records[r].alignment = 0;
    if ((st = tg_record_set_set_name(set, r, g->tensors[t].name)) != TG_OK) goto done;
  }

done:
  tg__free(alloc, order);
  tg__free(alloc, seen);
  tg__free(alloc, falls);
  tg__free(alloc, size);
  if (st != TG_OK) {
    if (st == TG_ERROR_OUT_OF_HOST_MEMORY) tg__error(err, st, "%s: out of memory", src);
    tg_model_records_destroy(m);
    return st;
  }
  *out = m;
  return TG_OK;
}

tg_status tg_model_records_create(const tg_graph *g, const tg_lifetimes *l, tg_storage storage,
                                  tg_precision precision, const tg_device_limits *limits,
                                  const tg_allocator *alloc, tg_model_records **out,
                                  tg_error_info *err) {
  return records_create(g, l, storage, precision, limits, 0, alloc, out, err);
}

tg_status tg_model_records_create_chain(const tg_graph *g, const tg_lifetimes *l, tg_storage storage,
                                        tg_precision precision, const tg_device_limits *limits,
                                        const tg_allocator *alloc, tg_model_records **out,
                                        tg_error_info *err) {
  return records_create(g, l, storage, precision, limits, 1, alloc, out, err);
}
