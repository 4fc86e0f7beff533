/* Tangram inside a Vulkan engine: a device made from the engine's own VkInstance, VkDevice and
 * VkQueue, so that a plan is realised in memory the engine binds to its own shaders.
 *
 * This header includes <vulkan/vulkan_core.h> (types only; Tangram calls Vulkan through the
 * vkGetInstanceProcAddr it is given, never through the loader's exported symbols). Engines on
 * volk define VK_NO_PROTOTYPES for the whole project as volk asks, or include volk.h first;
 * engines linking the loader include it as they include <vulkan/vulkan.h>. */
#ifndef TANGRAM_VULKAN_H
#define TANGRAM_VULKAN_H

#include <stddef.h>
#include <stdint.h>

#include <vulkan/vulkan_core.h>

#include "tangram/allocator.h"
#include "tangram/backend.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* One block of device memory the engine hands to Tangram. */
typedef struct tg_vulkan_memory_block {
  VkDeviceMemory memory;      /* the engine's allocation (it may hold other blocks too) */
  VkDeviceSize offset;        /* where the block starts inside `memory`: a multiple of the
                               * requested alignment */
  uint32_t memory_type;       /* the memory type index of `memory` */
  void *mapped;               /* host-access requests: the block's first byte, mapped */
  void *allocation;           /* the engine's handle of the block (a VmaAllocation, say);
                               * given back to free() untouched */
} tg_vulkan_memory_block;

/* Device memory through the engine's own allocator (VMA or its own), instead of
 * vkAllocateMemory. Tangram asks for one block per allocation it makes: in objects mode one per
 * shared object, in offsets mode one for the whole arena, and during tg_realization_check a few
 * small host-visible blocks for its mismatch counters. Every call comes from the thread calling
 * Tangram. */
typedef struct tg_vulkan_memory_callbacks {
  /* Allocate a block of at least requirements->size bytes, at an offset that is a multiple of
   * requirements->alignment, in a memory type whose bit is set in
   * requirements->memoryTypeBits and that has every flag of `required` (prefer `preferred`).
   * A block may hold buffers and optimal-tiling images side by side: keep it
   * bufferImageGranularity away from the engine's other resources (VMA does for blocks it
   * allocates with vmaAllocateMemory). With `host_access` Tangram reads and writes the block
   * from the host: `required` then includes HOST_VISIBLE and HOST_COHERENT, and `mapped` must
   * point at the block, mapped by the engine (VMA: VMA_ALLOCATION_CREATE_MAPPED_BIT); Tangram
   * never calls vkMapMemory on the engine's memory. Fill `*block` and return VK_SUCCESS, or
   * return an error: Tangram then fails the call that needed the memory and rolls back
   * (VK_ERROR_OUT_OF_DEVICE_MEMORY: TG_ERROR_OUT_OF_DEVICE_MEMORY; VK_ERROR_OUT_OF_HOST_MEMORY:
   * TG_ERROR_OUT_OF_HOST_MEMORY; others: TG_ERROR_DEVICE or the closest status), with the
   * VkResult as the device's native error. A block that breaks the request (a memory type not
   * allowed or without a required flag, a misaligned offset, no mapping) is given back through
   * free() at once, and the call fails with TG_ERROR_DEVICE. */
  VkResult (*allocate)(void *user, const VkMemoryRequirements *requirements,
                       VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred,
                       int host_access, tg_vulkan_memory_block *block);
  /* Give back a block allocate() returned. Tangram has destroyed every buffer and image it
   * bound to the block and waited for its own work on them. */
  void (*free)(void *user, const tg_vulkan_memory_block *block);
  void *user;
} tg_vulkan_memory_callbacks;

/* What Tangram borrows from the engine. Zero-initialise, then fill. Everything here is read
 * only during tg_device_wrap_vulkan (the structs pointed to must stay valid while the device is
 * open: Tangram keeps the pointers to `allocation_callbacks` and `memory`). */
typedef struct tg_vulkan_device_desc {
  VkInstance instance;
  VkPhysicalDevice physical_device;     /* one of `instance`'s */
  VkDevice device;                      /* created on `physical_device` */
  uint32_t queue_family_index;          /* `queue`'s family; it must support compute */
  VkQueue queue;                        /* a queue of `device` in that family */
  /* The engine's entry point (the loader's, volk's vkGetInstanceProcAddr, or a layer's).
   * Tangram loads every instance and device function it calls through it. Required. */
  PFN_vkGetInstanceProcAddr get_instance_proc_addr;
  /* VkApplicationInfo::apiVersion of `instance` (0 = Vulkan 1.0). Tangram uses Vulkan 1.1
   * queries only when this and the device both say 1.1 or later. */
  uint32_t api_version;
  /* Passed to every vkCreate*, vkAllocate*, vkDestroy* and vkFree* call Tangram makes. May be
   * NULL. */
  const VkAllocationCallbacks *allocation_callbacks;
  /* Device memory from the engine's allocator; NULL: Tangram calls vkAllocateMemory itself. */
  const tg_vulkan_memory_callbacks *memory;
  /* Usage added to every tensor buffer and image Tangram creates, beyond what it needs
   * itself (STORAGE, TRANSFER_SRC, TRANSFER_DST): UNIFORM_BUFFER, SAMPLED, ... 0 = none. The
   * device must support the usage for the image formats used, or images are reported as
   * unsupported. */
  VkBufferUsageFlags buffer_usage;
  VkImageUsageFlags image_usage;
  /* Fault injection, as tg_device_options::fail_device_alloc_at (0: read
   * TANGRAM_FAIL_DEVICE_ALLOC_AT). */
  uint64_t fail_device_alloc_at;
} tg_vulkan_device_desc;

/* Make a Tangram device of the engine's Vulkan objects. Tangram creates its own objects on the
 * borrowed device (tensor buffers and images, their memory unless `memory` is given, and for
 * tg_realization_check command pools, pipelines, descriptor pools, fences and events), with
 * `allocation_callbacks`, and destroys exactly those: tg_device_close never destroys, resets
 * or waits on the instance, device or queue, and afterwards they work as before.
 *
 * The queue is used only inside tg_realization_check, which submits once and waits on its own
 * fence (should that wait fail, on the queue, before releasing what the submission used): the
 * engine must not use the queue from another thread during that call (Vulkan's external
 * synchronisation of queues). Nothing else in Tangram touches the queue. The device's
 * other calls follow Vulkan's rules for the objects Tangram creates; use the Tangram device
 * from one thread at a time.
 *
 * Checks, each a clear error naming what is wrong, with nothing created and nothing borrowed
 * touched: NULL desc, handle or entry point (TG_ERROR_INVALID_ARGUMENT); a physical device
 * that is not one of the instance's, a queue family index out of range or a family without
 * compute (TG_ERROR_INVALID_ARGUMENT); an entry point that does not give the core functions
 * (TG_ERROR_NO_LOADER). A device without storage images opens (info.images = 0), and realising
 * a plan with textures on it fails then. Tangram cannot tell whether `queue` and `device`
 * really belong together: passing another device's queue is undefined behaviour, as in Vulkan.
 *
 * Validation messages are the engine's (its layers and messenger):
 * tg_device_get_validation_messages returns 0 for a wrapped device. The caller owns the device
 * (tg_device_close, after destroying its realizations); `*out` is NULL on failure. Cost: a few
 * physical-device queries and a few short-lived probe buffers and images. */
tg_status tg_device_wrap_vulkan(const tg_vulkan_device_desc *desc, const tg_allocator *alloc,
                                tg_device **out, tg_error_info *err);

/* A realised tensor as Vulkan objects, for the engine's descriptor sets. */
typedef struct tg_vulkan_tensor {
  VkBuffer buffer;            /* buffer storages: the tensor's own VkBuffer; else VK_NULL_HANDLE */
  VkImage image;              /* image storages: the tensor's own VkImage; else VK_NULL_HANDLE */
  VkDeviceMemory memory;      /* where it is bound (the engine's block with memory callbacks) */
  VkDeviceSize offset;        /* where it starts inside `memory` (includes the block's offset) */
  VkDeviceSize size;          /* bytes of `memory` it may use (its memory requirements) */
  VkDeviceSize bytes;         /* buffers: the tensor's bytes (the VkBuffer is that, rounded up to
                               * 4); images: 0 */
  VkImageType image_type;     /* 2D (texture_2d, texture_array) or 3D */
  VkFormat format;            /* R32G32B32A32_SFLOAT or R16G16B16A16_SFLOAT (the precision) */
  VkExtent3D extent;          /* texels; depth 1 unless 3D */
  uint32_t layers;            /* array layers (texture_array), else 1 */
  VkBufferUsageFlags buffer_usage;  /* what the buffer was created with */
  VkImageUsageFlags image_usage;    /* what the image was created with (optimal tiling,
                                     * exclusive sharing, initial layout UNDEFINED) */
  VkImageCreateFlags image_flags;   /* ... and its flags: VK_IMAGE_CREATE_ALIAS_BIT on Vulkan 1.1
                                     * and later (images of an in-place pair share their texels) */
} tg_vulkan_tensor;

/* Where record `record` of a realization on a Vulkan device (opened or wrapped) lives. An
 * empty tensor (zero bytes or a zero extent) has no buffer or image. Images are created in
 * VK_IMAGE_LAYOUT_UNDEFINED; their layout afterwards is the engine's business
 * (tg_realization_check leaves them in VK_IMAGE_LAYOUT_GENERAL with its own contents). Tensors
 * that share memory under the plan alias: their contents are meaningless to each other, and
 * the engine orders its accesses as the plan's schedule says; except the two tensors of an
 * in-place pair (tg_plan.in_place), identical images at one place created with
 * VK_IMAGE_CREATE_ALIAS_BIT, whose texels are shared (docs/embedding.md says what that asks
 * of the engine). The handles stay owned by the
 * realization and are valid until it is destroyed. TG_ERROR_INVALID_ARGUMENT for NULL
 * arguments or a record out of range; TG_ERROR_UNSUPPORTED for a realization on another
 * backend. Cheap. */
tg_status tg_vulkan_get_tensor(const tg_realization *realization, size_t record,
                               tg_vulkan_tensor *out);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
