/* The Vulkan backend's realisation: device memory and the tensors bound in it.
 *
 * Every tensor is its own VkBuffer (storage buffer) or VkImage (resources.c) bound to shared
 * VkDeviceMemory: in objects mode at offset 0 of its shared object's allocation, in arena mode
 * at its planned offset in one allocation that holds buffers and images alike. Sizes and
 * alignments come from the driver (vkGet*MemoryRequirements on a probe object), so plans made
 * from tg_device_compute_arena_records bind without surprises. Memory is Tangram's own
 * (vkAllocateMemory) or, on a wrapped device, the engine's through its memory callbacks.
 * Shared memory (host-visible, mapped for its whole life) is at the end of the file. */
#include <string.h>

#include "backends/vulkan/vulkan_state.h"

/* ---- small helpers ---- */

static uint64_t handle_u64(const void *handle, size_t size) {
  uint64_t u = 0;
  memcpy(&u, handle, size < sizeof u ? size : sizeof u);
  return u;
}
#define HANDLE_U64(h) handle_u64(&(h), sizeof(h))

/* The memory type for `bits` with `want` flags. For tensors: device-local first, then not
 * host-visible (on discrete GPUs device-local host-visible memory is a small BAR window). For
 * the host's counters: coherent and cached first. Protected and lazily allocated types never
 * suit. -1 if none. */
int tg__vk_pick_memory_type(const VkPhysicalDeviceMemoryProperties *mp, uint32_t bits,
                            VkMemoryPropertyFlags want, int prefer_device_local) {
  int best = -1, best_score = -1;
  for (uint32_t i = 0; i < mp->memoryTypeCount; ++i) {
    if (!(bits & (1u << i))) continue;
    VkMemoryPropertyFlags f = mp->memoryTypes[i].propertyFlags;
    if ((f & want) != want ||
        (f & (VK_MEMORY_PROPERTY_PROTECTED_BIT | VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT)))
      continue;
    int score = 0;
    if (prefer_device_local) {
      if (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) score += 2;
      if (!(f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) score += 1;
    } else {
      if (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) score += 2;
      if (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) score += 1;
    }
    if (score > best_score) {
      best = (int)i;
      best_score = score;
    }
  }
  return best;
}

/* ---- device memory ---- */

/* A block of device memory for `req` with every `required` flag: from the engine's memory
 * callbacks when it gave them, else vkAllocateMemory. `host_access`: mapped for the host
 * (coherent memory from the engine; Tangram's own may be non-coherent). `tensor`: a
 * realisation allocation (fault injection counts it; one larger than its heap is refused
 * without asking the driver). Counted as one live object. */
tg_status tg__vk_block_alloc(vk_device *v, const VkMemoryRequirements *req,
                             VkMemoryPropertyFlags required, int host_access, int tensor,
                             vk_block *out) {
  memset(out, 0, sizeof *out);
  const VkPhysicalDeviceMemoryProperties *mp = &v->memory_props;
  VkResult r = tensor ? tg__vk_injected(v) : VK_SUCCESS;
  if (r != VK_SUCCESS) return tg__vk_fail(v, r);
  if (v->memory_cb != NULL) {
    if (host_access)
      required |= VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    VkMemoryPropertyFlags preferred =
        host_access ? VK_MEMORY_PROPERTY_HOST_CACHED_BIT : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    tg_vulkan_memory_block b;
    memset(&b, 0, sizeof b);
    r = v->memory_cb->allocate(v->memory_cb->user, req, required, preferred, host_access, &b);
    if (r != VK_SUCCESS) return tg__vk_fail(v, r < 0 ? r : VK_ERROR_OUT_OF_DEVICE_MEMORY);
    /* What the engine returned must be what was asked for: a wrong block would be bound
     * anyway by the driver, silently, with undefined results. */
    int ok = b.memory != VK_NULL_HANDLE && b.memory_type < mp->memoryTypeCount &&
             (req->memoryTypeBits & (1u << b.memory_type)) &&
             (mp->memoryTypes[b.memory_type].propertyFlags & required) == required &&
             b.offset % (req->alignment ? req->alignment : 1) == 0 &&
             (!host_access || b.mapped != NULL);
    if (!ok) {
      v->memory_cb->free(v->memory_cb->user, &b);
      v->last_error = VK_SUCCESS; /* no driver call failed: the engine's block was wrong */
      return TG_ERROR_DEVICE;
    }
    out->b = b;
    out->engine = 1;
    out->coherent = 1;
  } else {
    int type = tg__vk_pick_memory_type(mp, req->memoryTypeBits, required, !host_access);
    if (type < 0) return TG_ERROR_UNSUPPORTED;
    if (tensor && req->size > mp->memoryHeaps[mp->memoryTypes[type].heapIndex].size)
      return TG_ERROR_OUT_OF_DEVICE_MEMORY;
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req->size;
    ai.memoryTypeIndex = (uint32_t)type;
    VkDeviceMemory memory;
    r = v->vk.vkAllocateMemory(v->device, &ai, v->vk_alloc, &memory);
    if (r != VK_SUCCESS) return tg__vk_fail(v, r);
    void *mapped = NULL;
    if (host_access && (r = v->vk.vkMapMemory(v->device, memory, 0, VK_WHOLE_SIZE, 0, &mapped)) !=
                           VK_SUCCESS) {
      v->vk.vkFreeMemory(v->device, memory, v->vk_alloc);
      return tg__vk_fail(v, r);
    }
    out->b.memory = memory;
    out->b.memory_type = (uint32_t)type;
    out->b.mapped = mapped;
    out->coherent =
        (mp->memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
  }
  v->live_objects++;
  return TG_OK;
}

/* Give a block back (Tangram's own: freed, which also unmaps). NULL memory: nothing. */
void tg__vk_block_free(vk_device *v, vk_block *block) {
  if (block->b.memory == VK_NULL_HANDLE) return;
  if (block->engine) v->memory_cb->free(v->memory_cb->user, &block->b);
  else v->vk.vkFreeMemory(v->device, block->b.memory, v->vk_alloc);
  v->live_objects--;
  memset(block, 0, sizeof *block);
}

/* ---- allocations and views ---- */

tg_status tg__vk_allocate(void *impl, const tg_tensor_resource *res, tg_precision precision,
                          int arena, void **memory) {
  vk_device *v = impl;
  VkMemoryRequirements req;
  if (arena) {
    /* One allocation for buffers and images at planned offsets: a memory type all of them
     * accept, sized exactly as planned (the records already carry the driver's sizes), starting
     * where every resource may start. */
    req.size = res->bytes;
    req.alignment = v->arena_alignment;
    req.memoryTypeBits = v->arena_type_bits;
  } else {
    /* The object's own resource: its members are no larger in any dimension, and bind()
     * checks that each member's real requirement fits. */
    resource_shape shape;
    tg_status st = tg__vk_probe_requirements(v, res, precision, &shape, &req);
    if (st != TG_OK) return st;
  }
  vk_memory *m = tg__calloc(&v->alloc, 1, sizeof *m);
  if (m == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  m->size = req.size;
  if (req.size == 0) { /* an empty object: nothing to allocate, nothing will be bound */
    *memory = m;
    return TG_OK;
  }
  tg_status st = tg__vk_block_alloc(v, &req, 0, 0, 1, &m->block);
  if (st != TG_OK) {
    tg__free(&v->alloc, m);
    return st;
  }
  m->type = m->block.b.memory_type;
  *memory = m;
  return TG_OK;
}

void tg__vk_release(void *impl, void *memory) {
  vk_device *v = impl;
  vk_memory *m = memory;
  if (m == NULL) return;
  tg__vk_block_free(v, &m->block);
  tg__free(&v->alloc, m);
}

static void destroy_view(vk_device *v, vk_view *w) {
  if (w->texel_view != VK_NULL_HANDLE) {
    v->vk.vkDestroyBufferView(v->device, w->texel_view, v->vk_alloc);
    v->live_objects--;
  }
  if (w->image_view != VK_NULL_HANDLE) {
    v->vk.vkDestroyImageView(v->device, w->image_view, v->vk_alloc);
    v->live_objects--;
  }
  tg__vk_destroy_resource(v, &w->buffer, &w->vk_image);
  tg__free(&v->alloc, w);
}

tg_status tg__vk_bind(void *impl, void *memory, const tg_tensor_resource *object,
                      uint64_t offset, const tg_tensor_resource *tensor, tg_precision precision,
                      int arena, void **view) {
  vk_device *v = impl;
  vk_memory *m = memory;
  (void)object;
  (void)arena;
  resource_shape s;
  tg_status st = tg__vk_shape_of(v, tensor, &s);
  if (st != TG_OK) return st;
  vk_view *w = tg__calloc(&v->alloc, 1, sizeof *w);
  if (w == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  w->memory = m;
  w->resource = *tensor;
  w->image = s.image;
  w->three_d = s.three_d;
  w->texel = s.texel;
  w->layers = s.layers;
  w->extent = s.extent;
  w->precision = precision;
  if (s.empty) {
    *view = w;
    return TG_OK;
  }
  st = tg__vk_create_resource(v, &s, precision, &w->buffer, &w->vk_image);
  if (st != TG_OK) {
    tg__free(&v->alloc, w);
    return st;
  }
  VkMemoryRequirements req;
  tg__vk_resource_requirements(v, w->buffer, w->vk_image, &req);
  /* The plan was made from the driver's own requirements; anything else is a plan that does
   * not fit this device (or, in objects mode, a member needing more than its object). */
  uint64_t end, at;
  if (m->block.b.memory == VK_NULL_HANDLE || !tg__add_u64(offset, req.size, &end) ||
      end > m->size || !tg__add_u64(m->block.b.offset, offset, &at) || at % req.alignment != 0 ||
      !(req.memoryTypeBits & (1u << m->type))) {
    destroy_view(v, w);
    return TG_ERROR_INVALID_PLAN;
  }
  w->offset = at;
  w->size = req.size;
  VkResult r = tg__vk_injected(v);
  if (r == VK_SUCCESS)
    r = w->image ? v->vk.vkBindImageMemory(v->device, w->vk_image, m->block.b.memory, at)
                 : v->vk.vkBindBufferMemory(v->device, w->buffer, m->block.b.memory, at);
  if (r != VK_SUCCESS) {
    destroy_view(v, w);
    return tg__vk_fail(v, r);
  }
  if (w->image) {
    VkImageViewCreateInfo vi = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
    vi.image = w->vk_image;
    /* 2D images are one-layer arrays to the shaders: one shader serves 2D and 2D arrays. */
    vi.viewType = w->three_d ? VK_IMAGE_VIEW_TYPE_3D : VK_IMAGE_VIEW_TYPE_2D_ARRAY;
    vi.format = tg__vk_image_format(precision);
    vi.subresourceRange.aspectMask = VK_IMAGE_ASPECT_COLOR_BIT;
    vi.subresourceRange.levelCount = 1;
    vi.subresourceRange.layerCount = w->layers;
    r = tg__vk_injected(v);
    if (r == VK_SUCCESS) r = v->vk.vkCreateImageView(v->device, &vi, v->vk_alloc, &w->image_view);
    if (r != VK_SUCCESS) {
      w->image_view = VK_NULL_HANDLE;
      destroy_view(v, w);
      return tg__vk_fail(v, r);
    }
    v->live_objects++;
  }
  *view = w;
  return TG_OK;
}

void tg__vk_unbind(void *impl, void *view) {
  if (view) destroy_view(impl, view);
}

void tg__vk_handle(void *impl, void *memory, void *view, tg_tensor_handle *out) {
  (void)impl;
  vk_memory *m = memory;
  vk_view *w = view;
  out->memory = HANDLE_U64(m->block.b.memory);
  out->offset = m->block.b.offset; /* the generic layer adds the tensor's place */
  out->native = w == NULL ? 0 : w->image ? HANDLE_U64(w->vk_image) : HANDLE_U64(w->buffer);
}

void tg__vulkan_describe_tensor(const void *impl, const void *memory, const void *view,
                                tg_vulkan_tensor *out) {
  const vk_device *v = impl;
  const vk_memory *m = memory;
  const vk_view *w = view;
  memset(out, 0, sizeof *out);
  out->buffer = w->buffer;
  out->image = w->vk_image;
  out->buffer_usage = v->buffer_usage;
  out->image_usage = v->image_usage;
  out->image_flags = v->image_flags;
  if (w->buffer == VK_NULL_HANDLE && w->vk_image == VK_NULL_HANDLE) return; /* empty */
  out->memory = m->block.b.memory;
  out->offset = w->offset;
  out->size = w->size;
  if (w->image) {
    out->image_type = w->three_d ? VK_IMAGE_TYPE_3D : VK_IMAGE_TYPE_2D;
    out->format = tg__vk_image_format(w->precision);
    out->extent = w->extent;
    out->layers = w->layers;
  } else {
    out->bytes = w->resource.bytes;
  }
}

/* ---- shared memory ----
 * A HOST_VISIBLE block (block_alloc with host access: Tangram's own, or the engine's through its
 * memory callbacks on a wrapped device), mapped for its whole life. map() invalidates and unmap() flushes the whole range when the type is not
 * HOST_COHERENT; coherent memory needs neither. The device's writes are made available to the
 * host by check_sync's barrier and fence; the host's writes reach device work submitted later
 * through the submission itself. */

/* Own blocks of a non-coherent type need flush/invalidate; the engine's are coherent. */
static int host_coherent(const vk_memory *m) { return m->block.coherent; }

tg_status tg__vk_allocate_shared(void *impl, const tg_tensor_resource *res,
                                 tg_precision precision, int arena, void **memory) {
  vk_device *v = impl;
  (void)arena;
  if (tg_storage_is_texture(res->storage)) return TG_ERROR_UNSUPPORTED; /* optimal tiling */
  resource_shape shape;
  VkMemoryRequirements req;
  tg_status st = tg__vk_probe_requirements(v, res, precision, &shape, &req);
  if (st != TG_OK) return st;
  vk_memory *m = tg__calloc(&v->alloc, 1, sizeof *m);
  if (m == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  uint64_t size = res->bytes;
  if (req.size > size) size = req.size;
  m->size = size;
  if (size == 0) {
    *memory = m;
    return TG_OK;
  }
  req.size = size;
  /* A host-visible block, mapped for its whole life: Tangram's own, or the engine's through
   * its memory callbacks (host_access) on a wrapped device. */
  st = tg__vk_block_alloc(v, &req, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, 1, 1, &m->block);
  if (st != TG_OK) {
    tg__free(&v->alloc, m);
    return st;
  }
  m->type = m->block.b.memory_type;
  m->mapped = m->block.b.mapped;
  *memory = m;
  return TG_OK;
}

/* Flush (host writes -> device) or invalidate (device writes -> host) a shared block. */
static tg_status sync_mapped(vk_device *v, vk_memory *m, int flush) {
  if (host_coherent(m)) return TG_OK;
  VkMappedMemoryRange mr = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
  mr.memory = m->block.b.memory;
  mr.offset = m->block.b.offset;
  mr.size = VK_WHOLE_SIZE;
  VkResult r = flush ? v->vk.vkFlushMappedMemoryRanges(v->device, 1, &mr)
                     : v->vk.vkInvalidateMappedMemoryRanges(v->device, 1, &mr);
  return r == VK_SUCCESS ? TG_OK : tg__vk_fail(v, r);
}

tg_status tg__vk_map(void *impl, void *memory, void **host) {
  vk_device *v = impl;
  vk_memory *m = memory;
  *host = NULL;
  if (m == NULL) return TG_ERROR_INVALID_ARGUMENT;
  if (m->block.b.memory == VK_NULL_HANDLE) return TG_OK;
  if (m->mapped == NULL) return TG_ERROR_INVALID_ARGUMENT; /* not shared memory */
  tg_status st = sync_mapped(v, m, 0);
  if (st != TG_OK) return st;
  *host = m->mapped;
  return TG_OK;
}

tg_status tg__vk_unmap(void *impl, void *memory) {
  vk_device *v = impl;
  vk_memory *m = memory;
  if (m == NULL) return TG_ERROR_INVALID_ARGUMENT;
  if (m->block.b.memory == VK_NULL_HANDLE) return TG_OK;
  if (m->mapped == NULL) return TG_ERROR_INVALID_ARGUMENT;
  return sync_mapped(v, m, 1);
}
