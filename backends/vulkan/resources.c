/* The Vulkan backend's resources: what a tensor is in Vulkan terms (a storage buffer, or an
 * RGBA32F / RGBA16F storage image: 2D, 2D array or 3D, optimal tiling), creating and destroying
 * the buffer or image, and its memory requirements, asked of the driver through a short-lived
 * probe object. Image formats and their limits live here too. */
#include <string.h>

#include "backends/vulkan/vulkan_state.h"

VkFormat tg__vk_image_format(tg_precision p) {
  return p == TG_PRECISION_FP16 ? VK_FORMAT_R16G16B16A16_SFLOAT : VK_FORMAT_R32G32B32A32_SFLOAT;
}

tg_status tg__vk_shape_of(const vk_device *v, const tg_tensor_resource *res, resource_shape *out) {
  memset(out, 0, sizeof *out);
  if (!tg_storage_is_texture(res->storage)) {
    if (res->bytes == 0) {
      out->empty = 1;
      return TG_OK;
    }
    /* Whole words: the shaders address uint words; the padding belongs to the tensor. */
    if (!tg__align_up(res->bytes, 4, &out->buffer_bytes)) return TG_ERROR_OVERFLOW;
    out->texel = res->storage == TG_STORAGE_IMAGE_BUFFER;
    return TG_OK;
  }
  out->image = 1;
  const tg_extent e = res->extent;
  if (e.w == 0 || e.h == 0 || e.d == 0) {
    out->empty = 1;
    return TG_OK;
  }
  const VkPhysicalDeviceLimits *l = &v->props.limits;
  switch (res->storage) {
    case TG_STORAGE_TEXTURE_2D:
    case TG_STORAGE_SINGLE_TEXTURE_2D:
      if (e.d != 1) return TG_ERROR_INVALID_ARGUMENT;
      if (e.w > l->maxImageDimension2D || e.h > l->maxImageDimension2D) return TG_ERROR_LIMIT;
      out->layers = 1;
      break;
    case TG_STORAGE_TEXTURE_ARRAY:
      if (e.w > l->maxImageDimension2D || e.h > l->maxImageDimension2D ||
          e.d > l->maxImageArrayLayers)
        return TG_ERROR_LIMIT;
      out->layers = (uint32_t)e.d;
      break;
    case TG_STORAGE_TEXTURE_3D:
      if (e.w > l->maxImageDimension3D || e.h > l->maxImageDimension3D ||
          e.d > l->maxImageDimension3D)
        return TG_ERROR_LIMIT;
      out->three_d = 1;
      out->layers = 1;
      break;
    default: return TG_ERROR_INVALID_ARGUMENT;
  }
  out->extent.width = (uint32_t)e.w;
  out->extent.height = (uint32_t)e.h;
  out->extent.depth = out->three_d ? (uint32_t)e.d : 1u;
  return TG_OK;
}

/* Create the buffer or image for a non-empty shape (not bound). Counted as live. */
tg_status tg__vk_create_resource(vk_device *v, const resource_shape *s, tg_precision precision,
                                 VkBuffer *buffer, VkImage *image) {
  VkResult r = tg__vk_injected(v);
  if (r != VK_SUCCESS) return tg__vk_fail(v, r);
  if (!s->image) {
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = s->buffer_bytes;
    bi.usage = v->buffer_usage | (s->texel ? VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT : 0u);
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    r = v->vk.vkCreateBuffer(v->device, &bi, v->vk_alloc, buffer);
  } else {
    int fp16 = precision == TG_PRECISION_FP16;
    if (s->three_d ? !(fp16 ? v->fp16_images_3d : v->fp32_images_3d)
                   : !(fp16 ? v->fp16_images : v->fp32_images))
      return TG_ERROR_UNSUPPORTED;
    VkImageCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
    ii.imageType = s->three_d ? VK_IMAGE_TYPE_3D : VK_IMAGE_TYPE_2D;
    ii.format = tg__vk_image_format(precision);
    ii.extent = s->extent;
    ii.mipLevels = 1;
    ii.arrayLayers = s->layers;
    ii.samples = VK_SAMPLE_COUNT_1_BIT;
    ii.tiling = VK_IMAGE_TILING_OPTIMAL;
    ii.usage = v->image_usage;
    ii.flags = v->image_flags;
    ii.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    ii.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    r = v->vk.vkCreateImage(v->device, &ii, v->vk_alloc, image);
  }
  if (r != VK_SUCCESS) return tg__vk_fail(v, r);
  v->live_objects++;
  return TG_OK;
}

void tg__vk_destroy_resource(vk_device *v, VkBuffer *buffer, VkImage *image) {
  if (*buffer != VK_NULL_HANDLE) {
    v->vk.vkDestroyBuffer(v->device, *buffer, v->vk_alloc);
    *buffer = VK_NULL_HANDLE;
    v->live_objects--;
  }
  if (*image != VK_NULL_HANDLE) {
    v->vk.vkDestroyImage(v->device, *image, v->vk_alloc);
    *image = VK_NULL_HANDLE;
    v->live_objects--;
  }
}

void tg__vk_resource_requirements(vk_device *v, VkBuffer buffer, VkImage image,
                                  VkMemoryRequirements *out) {
  if (buffer != VK_NULL_HANDLE) v->vk.vkGetBufferMemoryRequirements(v->device, buffer, out);
  else v->vk.vkGetImageMemoryRequirements(v->device, image, out);
  if (out->alignment == 0) out->alignment = 1;
}

/* Requirements of a resource through a short-lived probe object. */
tg_status tg__vk_probe_requirements(vk_device *v, const tg_tensor_resource *res,
                                    tg_precision precision, resource_shape *shape,
                                    VkMemoryRequirements *out) {
  tg_status st = tg__vk_shape_of(v, res, shape);
  if (st != TG_OK) return st;
  memset(out, 0, sizeof *out);
  if (shape->empty) {
    out->alignment = 1;
    out->memoryTypeBits = ~0u;
    return TG_OK;
  }
  VkBuffer buffer = VK_NULL_HANDLE;
  VkImage image = VK_NULL_HANDLE;
  st = tg__vk_create_resource(v, shape, precision, &buffer, &image);
  if (st != TG_OK) return st;
  tg__vk_resource_requirements(v, buffer, image, out);
  tg__vk_destroy_resource(v, &buffer, &image);
  return TG_OK;
}

tg_status tg__vk_requirements(void *impl, const tg_tensor_resource *res, tg_precision precision,
                              tg_resource_requirements *out) {
  vk_device *v = impl;
  resource_shape shape;
  VkMemoryRequirements req;
  tg_status st = tg__vk_probe_requirements(v, res, precision, &shape, &req);
  if (st != TG_OK) return st;
  out->size = req.size;
  out->alignment = req.alignment;
  out->linear = !shape.image; /* every image here is optimal tiling */
  return TG_OK;
}

/* Image format limits for storage images of `format` and `type`; 0 when unsupported. */
int tg__vk_image_limits(vk_device *v, VkFormat format, VkImageType type, VkImageFormatProperties *out) {
  VkFormatProperties fp;
  v->fi.GetPhysicalDeviceFormatProperties(v->physical, format, &fp);
  if (!(fp.optimalTilingFeatures & VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT)) return 0;
  return v->fi.GetPhysicalDeviceImageFormatProperties(v->physical, format, type,
                                                      VK_IMAGE_TILING_OPTIMAL, v->image_usage,
                                                      v->image_flags, out) == VK_SUCCESS;
}
