/* The OpenCL backend's realisation: device memory and the tensors bound in it.
 *   objects mode  one cl_mem per shared object: a buffer of the object's bytes, or an RGBA
 *                 image (2D, 2D array with extent.d layers, 3D) of the object's extent. A tensor
 *                 uses the start of its object (buffers) or the texels [0, extent) of it
 *                 (images, addressed with the object's pitch as on the host backend); it gets a
 *                 view struct but no cl_mem of its own.
 *   offsets mode  one parent buffer; each tensor is a sub-buffer at its planned offset, which
 *                 must be a multiple of CL_DEVICE_MEM_BASE_ADDR_ALIGN. 2D images inside the
 *                 arena only with cl_khr_image2d_from_buffer (an image over a sub-buffer).
 *   image_buffer  treated as a plain buffer (its bytes): a caller that wants an image1d_buffer
 *                 creates one over the tensor's buffer. Drivers differ in whether a 1D image
 *                 may sit on a sub-buffer (PoCL refuses), so the realisation does not depend
 *                 on it. The speed proxies (speed.c) make one when they first touch the tensor:
 *                 over the object (objects mode) or over the arena at the tensor's texel
 *                 (offsets mode), the tensor's texels wide.
 * Shared memory (buffers the host maps) is at the end of the file. */
#include <string.h>

#include "backends/opencl/opencl_state.h"

/* ------------------------------------------------------------------------------------------ */
/* Resources. */

int tg__ocl_image_kind(tg_storage s) {
  switch (s) {
    case TG_STORAGE_TEXTURE_2D:
    case TG_STORAGE_SINGLE_TEXTURE_2D:
      return IMG_2D;
    case TG_STORAGE_TEXTURE_ARRAY:
      return IMG_ARRAY;
    case TG_STORAGE_TEXTURE_3D:
      return IMG_3D;
    default:
      return -1;
  }
}

/* Row pitch and bytes of a 2D image over a buffer (cl_khr_image2d_from_buffer). */
static int from_buffer_layout(const ocl_device *d, const tg_extent *e, tg_precision p,
                              uint64_t *pitch, uint64_t *bytes) {
  uint64_t tb = tg__texel_bytes(p), row;
  if (!tg__mul_u64(e->w, tb, &row) || !tg__align_up(row, d->pitch_alignment * tb, pitch) ||
      !tg__mul_u64(*pitch, e->h, bytes))
    return 0;
  return 1;
}

tg_status tg__ocl_requirements(void *impl, const tg_tensor_resource *r, tg_precision p,
                               tg_resource_requirements *out) {
  ocl_device *d = impl;
  out->alignment = d->base_alignment;
  out->linear = 1;
  int kind = tg__ocl_image_kind(r->storage);
  if (kind < 0) {
    out->size = r->bytes;
    return TG_OK;
  }
  out->linear = 0;
  if (kind == IMG_2D && d->image2d_from_buffer && r->extent.d <= 1) {
    uint64_t pitch;
    if (!from_buffer_layout(d, &r->extent, p, &pitch, &out->size)) return TG_ERROR_OVERFLOW;
    uint64_t ia = d->image_base_alignment * tg__texel_bytes(p);
    if (ia > out->alignment) out->alignment = ia;
    return TG_OK;
  }
  /* Not placeable in an arena on this device: report the texels' bytes so arena records can
   * still be built; realising them in offsets mode is refused by the generic layer. */
  uint64_t v;
  if (tg_extent_volume(r->extent, &v) != TG_OK || !tg__mul_u64(v, tg__texel_bytes(p), &out->size))
    return TG_ERROR_OVERFLOW;
  return TG_OK;
}

static void release_mem(ocl_device *d, cl_mem m) {
  if (m == NULL) return;
  d->api.ReleaseMemObject(m);
  d->live_mem_objects--;
}

/* The end of an allocation: `m` with its cl_mem made (`e` the driver's code, `made` 0 when the
 * call gave no object it should have), counted as live and returned in *memory, or freed. */
static tg_status finish_allocation(ocl_device *d, ocl_memory *m, cl_int e, int made, void **memory) {
  if (e != CL_SUCCESS || !made) {
    if (m->mem) d->api.ReleaseMemObject(m->mem);
    tg__free(&d->alloc, m);
    return tg__ocl_fail_cl(d, e != CL_SUCCESS ? e : CL_MEM_OBJECT_ALLOCATION_FAILURE);
  }
  if (m->mem) {
    d->live_mem_objects++;
    d->mem_objects_created++;
  }
  *memory = m;
  return TG_OK;
}

tg_status tg__ocl_allocate(void *impl, const tg_tensor_resource *r, tg_precision precision,
                           int arena, void **memory) {
  ocl_device *d = impl;
  const ocl_api *a = &d->api;
  ocl_memory *m = tg__calloc(&d->alloc, 1, sizeof *m);
  if (m == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  m->storage = arena ? TG_STORAGE_BUFFER : r->storage;
  m->extent = r->extent;
  m->bytes = r->bytes;
  m->arena = arena;
  cl_int e = CL_SUCCESS;
  int kind = tg__ocl_image_kind(m->storage);
  if (kind < 0) {
    if (m->bytes > SIZE_MAX) {
      tg__free(&d->alloc, m);
      return tg__ocl_fail_cl(d, CL_INVALID_BUFFER_SIZE);
    }
    if (m->bytes > 0)
      m->mem = a->CreateBuffer(d->context, CL_MEM_READ_WRITE, (size_t)m->bytes, NULL, &e);
  } else {
    if (!d->images || !d->formats[kind][precision]) {
      tg__free(&d->alloc, m);
      return tg__ocl_fail_cl(d, CL_IMAGE_FORMAT_NOT_SUPPORTED);
    }
    const tg_extent *x = &m->extent;
    /* Check the limits here: drivers disagree on the code for an oversized image. */
    const tg_device_limits *l = &d->limits;
#define OVER(v, limit) ((limit) != 0 && (v) > (limit)) /* a zero limit was not reported */
    int too_big =
        kind == IMG_3D
            ? (OVER(x->w, l->max_texture_3d_width) || OVER(x->h, l->max_texture_3d_height) ||
               OVER(x->d, l->max_texture_3d_depth))
            : (OVER(x->w, l->max_texture_2d_width) || OVER(x->h, l->max_texture_2d_height) ||
               (kind == IMG_ARRAY ? OVER(x->d, l->max_texture_array_layers) : x->d > 1));
#undef OVER
    if (too_big || x->w > SIZE_MAX || x->h > SIZE_MAX || x->d > SIZE_MAX) {
      tg__free(&d->alloc, m);
      return tg__ocl_fail_cl(d, CL_INVALID_IMAGE_SIZE);
    }
    if (x->w > 0 && x->h > 0 && x->d > 0) {
      cl_image_format format = {CL_RGBA, precision == TG_PRECISION_FP16 ? CL_HALF_FLOAT : CL_FLOAT};
      cl_image_desc desc;
      memset(&desc, 0, sizeof desc);
      desc.image_width = (size_t)x->w;
      desc.image_height = (size_t)x->h;
      if (kind == IMG_2D)
        desc.image_type = CL_MEM_OBJECT_IMAGE2D;
      else if (kind == IMG_ARRAY) {
        desc.image_type = CL_MEM_OBJECT_IMAGE2D_ARRAY;
        desc.image_array_size = (size_t)x->d;
      } else {
        desc.image_type = CL_MEM_OBJECT_IMAGE3D;
        desc.image_depth = (size_t)x->d;
      }
      m->mem = a->CreateImage(d->context, CL_MEM_READ_WRITE, &format, &desc, NULL, &e);
    }
  }
  return finish_allocation(d, m, e, !(m->mem == NULL && m->bytes > 0 && kind < 0), memory);
}

void tg__ocl_release(void *impl, void *memory) {
  ocl_device *d = impl;
  ocl_memory *m = memory;
  if (m == NULL) return;
  release_mem(d, m->mem);
  tg__free(&d->alloc, m);
}

tg_status tg__ocl_bind(void *impl, void *memory, const tg_tensor_resource *object,
                       uint64_t offset, const tg_tensor_resource *tensor,
                       tg_precision precision, int arena, void **view) {
  ocl_device *d = impl;
  const ocl_api *a = &d->api;
  ocl_memory *m = memory;
  (void)object;
  ocl_view *v = tg__calloc(&d->alloc, 1, sizeof *v);
  if (v == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  v->memory = m;
  v->offset = offset;
  int kind = tg__ocl_image_kind(tensor->storage);
  tg_status st = TG_OK;
  cl_int e = CL_SUCCESS;

  if (!arena) {
    /* The tensor uses the start of its object: no driver object of its own. */
    if (kind < 0) {
      if (tg_storage_is_texture(m->storage) || tensor->bytes > m->bytes) st = TG_ERROR_INVALID_PLAN;
    } else {
      const tg_extent *t = &tensor->extent, *o = &m->extent;
      if (tg__ocl_image_kind(m->storage) != kind || t->w > o->w || t->h > o->h || t->d > o->d)
        st = TG_ERROR_INVALID_PLAN;
    }
    v->mem = m->mem;
    if (st != TG_OK)
      tg__free(&d->alloc, v);
    else
      *view = v;
    return st;
  }

  /* Arena: a sub-buffer at the planned offset (and an image over it for 2D images). */
  uint64_t bytes = tensor->bytes, pitch = 0, end;
  if (kind >= 0) {
    if (kind != IMG_2D || !d->image2d_from_buffer || tensor->extent.d > 1) {
      tg__free(&d->alloc, v);
      return tg__ocl_fail_cl(d, CL_INVALID_OPERATION);
    }
    if (!from_buffer_layout(d, &tensor->extent, precision, &pitch, &bytes)) {
      tg__free(&d->alloc, v);
      return TG_ERROR_OVERFLOW;
    }
  }
  if (!tg__add_u64(offset, bytes, &end) || end > m->bytes) {
    tg__free(&d->alloc, v);
    return TG_ERROR_INVALID_PLAN;
  }
  if (bytes == 0) { /* an empty tensor needs no memory: nothing to create */
    *view = v;
    return TG_OK;
  }
  uint64_t align = d->base_alignment;
  if (kind >= 0 && d->image_base_alignment * tg__texel_bytes(precision) > align)
    align = d->image_base_alignment * tg__texel_bytes(precision);
  if (offset % align != 0) {
    /* The plan was not made with this device's alignment (plan with alignment =
     * info.buffer_alignment); the driver would refuse with the same code. */
    tg__free(&d->alloc, v);
    return tg__ocl_fail_cl(d, CL_MISALIGNED_SUB_BUFFER_OFFSET);
  }
  cl_buffer_region region = {(size_t)offset, (size_t)bytes};
  cl_mem sub =
      a->CreateSubBuffer(m->mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &e);
  if (sub == NULL || e != CL_SUCCESS) {
    if (sub) a->ReleaseMemObject(sub);
    tg__free(&d->alloc, v);
    return tg__ocl_fail_cl(d, e != CL_SUCCESS ? e : CL_MEM_OBJECT_ALLOCATION_FAILURE);
  }
  d->live_mem_objects++;
  d->mem_objects_created++;
  v->owned = 1;
  if (kind < 0) {
    v->mem = sub;
    *view = v;
    return TG_OK;
  }
  cl_image_format format = {CL_RGBA, precision == TG_PRECISION_FP16 ? CL_HALF_FLOAT : CL_FLOAT};
  cl_image_desc desc = {
      .image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = (size_t)tensor->extent.w,
      .image_height = (size_t)tensor->extent.h, .image_row_pitch = (size_t)pitch, .buffer = sub
  };
  cl_mem img = a->CreateImage(d->context, CL_MEM_READ_WRITE, &format, &desc, NULL, &e);
  if (img == NULL || e != CL_SUCCESS) {
    if (img) a->ReleaseMemObject(img);
    release_mem(d, sub);
    tg__free(&d->alloc, v);
    return tg__ocl_fail_cl(d, e != CL_SUCCESS ? e : CL_MEM_OBJECT_ALLOCATION_FAILURE);
  }
  d->live_mem_objects++;
  d->mem_objects_created++;
  v->sub = sub;
  v->mem = img;
  *view = v;
  return TG_OK;
}

void tg__ocl_unbind(void *impl, void *view) {
  ocl_device *d = impl;
  ocl_view *v = view;
  if (v == NULL) return;
  if (v->owned) {
    release_mem(d, v->mem);
    release_mem(d, v->sub);
  }
  release_mem(d, v->ib);
  tg__free(&d->alloc, v);
}

void tg__ocl_handle(void *impl, void *memory, void *view, tg_tensor_handle *out) {
  (void)impl;
  const ocl_memory *m = memory;
  const ocl_view *v = view;
  out->memory = (uint64_t)(uintptr_t)(m ? m->mem : NULL);
  out->native = (uint64_t)(uintptr_t)(v ? v->mem : NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* Shared memory: buffers the host maps without a copy (CL_MEM_ALLOC_HOST_PTR). The host maps
 * them only while no kernel uses them (the generic layer calls check_sync first), on the
 * in-order queue, and unmaps them before kernels use them again; the unmap is finished before
 * returning so that work on the out-of-order queue, which is not ordered after the in-order
 * one, sees the host's writes. */

tg_status tg__ocl_allocate_shared(void *impl, const tg_tensor_resource *r,
                                  tg_precision precision, int arena, void **memory) {
  ocl_device *d = impl;
  (void)precision;
  if (tg_storage_is_texture(r->storage)) return tg__ocl_fail_cl(d, CL_INVALID_OPERATION);
  ocl_memory *m = tg__calloc(&d->alloc, 1, sizeof *m);
  if (m == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  m->storage = TG_STORAGE_BUFFER;
  m->extent = (tg_extent){r->bytes, 1, 1};
  m->bytes = r->bytes;
  m->arena = arena;
  m->shared = 1;
  if (m->bytes > SIZE_MAX) {
    tg__free(&d->alloc, m);
    return tg__ocl_fail_cl(d, CL_INVALID_BUFFER_SIZE);
  }
  cl_int e = CL_SUCCESS;
  if (m->bytes > 0)
    m->mem = d->api.CreateBuffer(d->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                                 (size_t)m->bytes, NULL, &e);
  return finish_allocation(d, m, e, !(m->mem == NULL && m->bytes > 0), memory);
}

tg_status tg__ocl_map(void *impl, void *memory, void **host) {
  ocl_device *d = impl;
  ocl_memory *m = memory;
  *host = NULL;
  if (m == NULL || !m->shared) return TG_ERROR_INVALID_ARGUMENT;
  if (m->mem == NULL) return TG_OK;
  if (m->mapped == NULL) {
    cl_int e = CL_SUCCESS;
    void *p = d->api.EnqueueMapBuffer(d->queue, m->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                      (size_t)m->bytes, 0, NULL, NULL, &e);
    if (e != CL_SUCCESS || p == NULL) return tg__ocl_fail_cl(d, e != CL_SUCCESS ? e : CL_MAP_FAILURE);
    m->mapped = p;
  }
  *host = m->mapped;
  return TG_OK;
}

tg_status tg__ocl_unmap(void *impl, void *memory) {
  ocl_device *d = impl;
  ocl_memory *m = memory;
  if (m == NULL || !m->shared) return TG_ERROR_INVALID_ARGUMENT;
  if (m->mapped == NULL) return TG_OK;
  cl_int e = d->api.EnqueueUnmapMemObject(d->queue, m->mem, m->mapped, 0, NULL, NULL);
  m->mapped = NULL;
  if (e == CL_SUCCESS) e = d->api.Finish(d->queue);
  return e == CL_SUCCESS ? TG_OK : tg__ocl_fail_cl(d, e);
}
