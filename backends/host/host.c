/* The host backend: device memory is aligned host memory and the shadow run happens on the CPU.
 * It is the embedded default when no GPU driver is present and the reference the GPU backends
 * are tested against. Images are laid out like a driver would: an object image of extent
 * (W,H,D) holds texel (x,y,z) at ((z*H + y)*W + x); a tensor using a smaller region of a shared
 * image addresses it with the object's pitch. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backends/protocol.h"

#define HOST_ALIGNMENT 64u

typedef struct host_memory {
  void *raw;            /* what the allocator returned */
  uint8_t *base;        /* HOST_ALIGNMENT-aligned start */
  uint64_t bytes;
} host_memory;

typedef struct host_view {
  host_memory *memory;
  uint64_t offset;      /* start of the tensor inside the memory */
  tg_extent pitch;      /* image layout the tensor is addressed with (object extent, or own) */
} host_view;

typedef struct host_device {
  tg_allocator alloc;
  tg_precision precision;
  uint64_t *mismatches; /* per record during a check */
  size_t record_count;
  uint64_t checked_bytes;
} host_device;

static tg_status host_open(const tg_device_options *options, const tg_allocator *alloc,
                           void **impl, tg_device_info *info, tg_error_info *err) {
  (void)options;
  (void)err;
  host_device *h = tg__calloc(alloc, 1, sizeof *h);
  if (h == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  h->alloc = *alloc;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  uint64_t phys = (pages > 0 && page > 0) ? (uint64_t)pages * (uint64_t)page : (1ull << 32);
  snprintf(info->name, sizeof info->name, "host memory");
  snprintf(info->kind, sizeof info->kind, "host");
  snprintf(info->driver, sizeof info->driver, "tangram host backend");
  info->limits = (tg_device_limits){0}; /* no image limits on the host */
  info->memory_budget = phys;
  info->max_allocation = phys;
  info->limits.max_buffer_bytes = phys;
  info->buffer_alignment = HOST_ALIGNMENT;
  info->image_alignment = HOST_ALIGNMENT;
  info->buffer_image_granularity = 1;
  info->images = 1;
  info->fp16_images = 1;
  info->image2d_from_buffer = 1;
  info->arena_images = 1;
  info->out_of_order = 0;
  info->read_write_images = 1;
  *impl = h;
  return TG_OK;
}

static void host_close(void *impl) {
  host_device *h = impl;
  if (h == NULL) return;
  tg_allocator a = h->alloc;
  tg__free(&a, h->mismatches);
  tg__free(&a, h);
}

static tg_status host_allocate(void *impl, const tg_tensor_resource *res, tg_precision precision,
                               int arena, void **memory) {
  host_device *h = impl;
  (void)precision;
  (void)arena;
  host_memory *m = tg__calloc(&h->alloc, 1, sizeof *m);
  if (m == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  uint64_t bytes = res->bytes, padded;
  if (!tg__add_u64(bytes, HOST_ALIGNMENT, &padded) || padded > SIZE_MAX) {
    tg__free(&h->alloc, m);
    return TG_ERROR_OUT_OF_DEVICE_MEMORY;
  }
  m->raw = tg__malloc(&h->alloc, (size_t)padded);
  if (m->raw == NULL) {
    tg__free(&h->alloc, m);
    return TG_ERROR_OUT_OF_DEVICE_MEMORY;
  }
  uintptr_t p = (uintptr_t)m->raw;
  m->base = (uint8_t *)((p + HOST_ALIGNMENT - 1) & ~(uintptr_t)(HOST_ALIGNMENT - 1));
  m->bytes = bytes;
  /* Fresh memory holds a pattern no signature matches word-for-word, so a tensor read before
   * anything wrote it is reported. */
  memset(m->base, 0xA5, (size_t)bytes);
  *memory = m;
  return TG_OK;
}

static void host_release(void *impl, void *memory) {
  host_device *h = impl;
  host_memory *m = memory;
  if (m == NULL) return;
  tg__free(&h->alloc, m->raw);
  tg__free(&h->alloc, m);
}

static tg_status host_bind(void *impl, void *memory, const tg_tensor_resource *object,
                           uint64_t offset, const tg_tensor_resource *tensor,
                           tg_precision precision, int arena, void **view) {
  host_device *h = impl;
  host_memory *m = memory;
  host_view *v = tg__calloc(&h->alloc, 1, sizeof *v);
  if (v == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  v->memory = m;
  v->offset = offset;
  int image = tg_storage_is_texture(tensor->storage);
  v->pitch = (image && !arena) ? object->extent : tensor->extent;
  /* The generic layer validated the plan; still refuse a view that would leave its memory. */
  uint64_t need = tensor->bytes, end;
  if (image) {
    if (tg_extent_volume(v->pitch, &need) != TG_OK ||
        !tg__mul_u64(need, tg__texel_bytes(precision), &need)) {
      tg__free(&h->alloc, v);
      return TG_ERROR_OVERFLOW;
    }
  }
  if (!tg__add_u64(offset, need, &end) || end > m->bytes ||
      (image && (tensor->extent.w > v->pitch.w || tensor->extent.h > v->pitch.h ||
                 tensor->extent.d > v->pitch.d))) {
    tg__free(&h->alloc, v);
    return TG_ERROR_INVALID_PLAN;
  }
  *view = v;
  return TG_OK;
}

static void host_unbind(void *impl, void *view) {
  host_device *h = impl;
  tg__free(&h->alloc, view);
}

static void host_handle(void *impl, void *memory, void *view, tg_tensor_handle *out) {
  (void)impl;
  host_memory *m = memory;
  host_view *v = view;
  out->memory = (uint64_t)(uintptr_t)m->base;
  out->native = (uint64_t)(uintptr_t)(m->base + (v ? v->offset : 0));
}

static tg_status host_check_begin(void *impl, size_t record_count, size_t op_count,
                                  int out_of_order, tg_precision precision) {
  host_device *h = impl;
  h->precision = precision;
  (void)op_count;
  (void)out_of_order;
  tg__free(&h->alloc, h->mismatches);
  h->mismatches = tg__calloc(&h->alloc, record_count ? record_count : 1, sizeof *h->mismatches);
  if (h->mismatches == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  h->record_count = record_count;
  h->checked_bytes = 0;
  return TG_OK;
}

/* Visit every word (buffers) or texel channel (images) of a tensor: verify or write. */
static void host_access(host_device *h, const tg__check_access *acc, tg_precision precision,
                        int write) {
  const host_view *v = acc->view;
  const tg_tensor_resource *res = acc->resource;
  uint8_t *base = v->memory->base + v->offset;
  uint32_t id = acc->signature_id;
  uint64_t bad = 0;
  if (!tg_storage_is_texture(res->storage)) {
    bad = tg__signature_buffer_access(base, res->bytes, id, write);
    h->checked_bytes += res->bytes;
  } else {
    const tg_extent e = res->extent, p = v->pitch;
    uint64_t tb = tg__texel_bytes(precision);
    for (uint64_t z = 0; z < e.d; ++z)
      for (uint64_t y = 0; y < e.h; ++y)
        for (uint64_t x = 0; x < e.w; ++x) {
          uint8_t *texel = base + ((z * p.h + y) * p.w + x) * tb;
          uint64_t linear = (z * e.h + y) * e.w + x;
          for (uint32_t c = 0; c < 4; ++c) {
            float want = tg_signature_texel(id, (uint32_t)(linear * 4 + c));
            if (precision == TG_PRECISION_FP16) {
              uint16_t hw = tg__float_to_half_exact(want), hv;
              if (write) memcpy(texel + 2 * c, &hw, 2);
              else {
                memcpy(&hv, texel + 2 * c, 2);
                bad += hv != hw;
              }
            } else {
              float fv;
              if (write) memcpy(texel + 4 * c, &want, 4);
              else {
                memcpy(&fv, texel + 4 * c, 4);
                bad += fv != want;
              }
            }
          }
        }
    h->checked_bytes += e.w * e.h * e.d * tb;
  }
  if (!write) h->mismatches[acc->record] += bad;
}

static tg_status host_check_op(void *impl, size_t op, const tg__check_access *reads,
                               size_t read_count, const tg__check_access *writes,
                               size_t write_count, const uint32_t *waits, size_t wait_count) {
  host_device *h = impl;
  (void)op;
  (void)waits;
  (void)wait_count;
  for (size_t i = 0; i < read_count; ++i) host_access(h, &reads[i], h->precision, 0);
  for (size_t i = 0; i < write_count; ++i) host_access(h, &writes[i], h->precision, 1);
  return TG_OK;
}

static tg_status host_check_end(void *impl, uint64_t *mismatches, uint64_t *checked_bytes) {
  host_device *h = impl;
  for (size_t r = 0; r < h->record_count; ++r) mismatches[r] += h->mismatches[r];
  *checked_bytes = h->checked_bytes;
  return TG_OK;
}

static void host_check_abort(void *impl) { (void)impl; }

/* Shared memory is plain host memory, like device memory here: mapping is the pointer. */
static tg_status host_map(void *impl, void *memory, void **host) {
  (void)impl;
  host_memory *m = memory;
  *host = m ? m->base : NULL;
  return TG_OK;
}

static tg_status host_unmap(void *impl, void *memory) {
  (void)impl;
  (void)memory;
  return TG_OK;
}

static const tg__backend_vtable k_host = {
    TG_BACKEND_HOST, host_open,   host_close,  NULL,          NULL,
    NULL,            host_allocate, host_release, host_bind,  host_unbind,
    host_handle,     host_check_begin, host_check_op, host_check_end, host_check_abort,
    host_allocate,   host_map,    host_unmap,  NULL,
    NULL,            NULL,        NULL,        NULL, /* no proxy kernels */
};

const tg__backend_vtable *tg__host_backend(void) { return &k_host; }
